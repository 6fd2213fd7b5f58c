package tools

// GH exposes the GitHub CLI's configuration read-only: config.yml (aliases, which may
// run shell commands on the host, so never writable) and hosts.yml, the credential gh
// cannot authenticate without unless GH_TOKEN is set. With the token in the system
// keyring (gh's default since 2.40), hosts.yml names the account only and gh in the
// sandbox needs GH_TOKEN. Extensions are bound read-only so they run.
func GH() Tool {
	return Tool{
		Name:        "gh",
		Description: "GitHub CLI: config and hosts.yml (read-only), extensions (read-only)",
		Detect: func(h Host) bool {
			return h.onPath("gh") || h.exists(ghConfig(h).src)
		},
		Bindings: func(h Host) []Binding {
			cfg := ghConfig(h)
			bs := []Binding{cfg.join("config.yml").bind(RO), cfg.join("hosts.yml").bind(RO)}
			bs = append(bs, h.data("gh/extensions").bind(RO))
			return h.withExecutables(bs, "gh")
		},
		Env:     []string{"GH_CONFIG_DIR", "GH_HOST", "GH_REPO", "GH_PROMPT_DISABLED", "GH_NO_UPDATE_NOTIFIER", "GH_PAGER"},
		Secrets: []string{"GH_TOKEN", "GITHUB_TOKEN", "GH_ENTERPRISE_TOKEN", "GITHUB_ENTERPRISE_TOKEN"},
		Egress: []string{"github.com", "api.github.com", "uploads.github.com", "codeload.github.com",
			"objects.githubusercontent.com", "raw.githubusercontent.com"},
	}
}

// ghConfig is gh's configuration directory: GH_CONFIG_DIR, else the XDG one.
func ghConfig(h Host) place { return h.envPlace("GH_CONFIG_DIR", h.config("gh")) }
