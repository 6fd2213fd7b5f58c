package tools

// gitConfigFiles are the global git files exposed read-only, relative to home. Not the
// whole ~/.config/git: git-credential-store keeps its tokens in ~/.config/git/credentials.
var gitConfigFiles = []string{".gitconfig", ".gitignore_global", ".gitattributes_global"}

// Git exposes the user's git configuration read-only. The repository itself is part of
// the project view; its hooks and config are protected by the isolator, not here.
func Git() Tool {
	return Tool{
		Name:        "git",
		Description: "git configuration (read-only)",
		Detect: func(h Host) bool {
			return h.onPath("git") || h.exists(h.Home+"/.gitconfig") || h.exists(h.config("git/config").src)
		},
		Bindings: func(h Host) []Binding {
			var bs []Binding
			for _, f := range gitConfigFiles {
				bs = append(bs, h.home(f).bind(RO))
			}
			for _, f := range []string{"config", "ignore", "attributes"} {
				bs = append(bs, h.config("git/"+f).bind(RO))
			}
			if p, ok := h.usable(h.Env["GIT_CONFIG_GLOBAL"]); ok {
				bs = append(bs, p.bind(RO)) // passed, so git reads it there
			}
			return bs
		},
		Env: []string{"GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL", "GIT_CONFIG_GLOBAL"},
		Egress: []string{"github.com", "*.github.com", "*.githubusercontent.com",
			"gitlab.com", "bitbucket.org"},
	}
}
