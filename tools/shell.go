package tools

// shellRCFiles are the shell start-up files exposed read-only, relative to home. They
// are code the host shell runs, so the sandbox never writes them.
var shellRCFiles = []string{
	".profile", ".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".bash_aliases",
	".inputrc", ".zshrc", ".zshenv", ".zprofile", ".zlogin", ".dircolors",
	".config/fish/config.fish",
}

// shellRCDirs are directories of start-up snippets the rc files source. Frameworks,
// prompts and multiplexers (oh-my-zsh, starship, powerlevel10k, tmux, zellij) are
// tools of their own.
var shellRCDirs = []string{".bashrc.d", ".config/fish/conf.d", ".config/fish/functions"}

// Shell exposes the user's shell start-up files read-only, so an interactive shell in
// the sandbox looks like the user's own. Version managers the rc files source (nvm,
// cargo's env, mise, pyenv) and the shell comforts (prompt.go) are bound by their own
// tools.
func Shell() Tool {
	return Tool{
		Name:        "shell",
		Description: "shell start-up files (read-only)",
		Detect:      func(Host) bool { return true },
		Bindings: func(h Host) []Binding {
			var bs []Binding
			for _, f := range shellRCFiles {
				bs = append(bs, h.home(f).bind(RO))
			}
			for _, d := range shellRCDirs {
				bs = append(bs, h.home(d).bind(RO))
			}
			return bs
		},
		Env: []string{"EDITOR", "VISUAL"},
	}
}
