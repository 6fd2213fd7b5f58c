package tools

// ampState is what Amp writes in its data directory: its threads, the sandbox's own.
// The host's secrets.json (the access token `amp login` saved) is read-only.
func ampState() []State {
	return []State{{Path: "threads", Dir: true}}
}

// Amp exposes Sourcegraph's Amp CLI. Its settings (~/.config/amp: settings.json with
// MCP servers, permissions and command allowlists, AGENTS.md, skills, toolboxes) are
// read-only; its data directory (~/.local/share/amp) is the sandbox's own copy (see
// ownDir) with the host's entries read-only. The install (an npm global, or the
// binary in ~/.local/bin) is read-only.
func Amp() Tool {
	return Tool{
		Name:        "amp",
		Description: "Amp: ~/.config/amp read-only, its data the sandbox's own (secrets.json read-only); install read-only",
		Detect: func(h Host) bool {
			return h.onPath("amp") || h.exists(h.config("amp").src) || h.exists(h.data("amp").src)
		},
		Bindings: func(h Host) []Binding {
			bs := []Binding{h.config("amp").bind(RO)}
			bs = append(bs, h.ownDir(h.data("amp"), ampState()...)...)
			return h.withExecutables(bs, "amp")
		},
		Env:     []string{"AMP_URL", "AMP_SETTINGS_FILE", "AMP_SKIP_UPDATE_CHECK", "AMP_TOOLBOX"},
		Secrets: []string{"AMP_API_KEY"},
		Egress:  []string{"ampcode.com", "*.ampcode.com"},
	}
}
