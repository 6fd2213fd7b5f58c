package tools

// Git exposes the user's git configuration read-only. The repository itself is part of
// the project view; its hooks and config are protected by the isolator, not here.
func Git() Tool {
	return Tool{
		Name:        "git",
		Description: "git configuration (read-only)",
		Detect: func(h Host) bool {
			return h.onPath("git") || h.exists(h.Home+"/.gitconfig")
		},
		Bindings: func(h Host) []Binding {
			var bs []Binding
			for _, f := range []string{".gitconfig", ".config/git/config", ".config/git/ignore", ".config/git/attributes"} {
				bs = append(bs, Binding{Source: h.Home + "/" + f, HomeRelativeDest: f, Mode: RO, Optional: true})
			}
			return bs
		},
		Env: []string{"GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL"},
		Egress: []string{"github.com", "*.github.com", "*.githubusercontent.com",
			"gitlab.com", "bitbucket.org"},
	}
}
