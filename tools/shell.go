package tools

// shellRCFiles are the shell start-up files exposed read-only, relative to home.
var shellRCFiles = []string{
	".profile", ".bashrc", ".bash_profile", ".bash_login", ".bash_aliases", ".inputrc",
	".zshrc", ".zshenv", ".zprofile", ".config/fish/config.fish",
}

// Shell exposes the user's shell start-up files read-only, so an interactive shell in
// the sandbox looks like the user's own.
func Shell() Tool {
	return Tool{
		Name:        "shell",
		Description: "shell start-up files (read-only)",
		Detect:      func(Host) bool { return true },
		Bindings: func(h Host) []Binding {
			var bs []Binding
			for _, f := range shellRCFiles {
				bs = append(bs, Binding{Source: h.Home + "/" + f, HomeRelativeDest: f, Mode: RO, Optional: true})
			}
			return bs
		},
	}
}
