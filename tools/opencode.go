package tools

// OpenCode exposes opencode. Its configuration (~/.config/opencode: providers, MCP
// servers, agents, commands, JS plugins) is read-only, with OPENCODE_CONFIG and
// OPENCODE_CONFIG_DIR when set. Its data directory (~/.local/share/opencode) is
// read-write: auth.json holds provider keys and OAuth tokens it refreshes, and sessions
// and snapshots live there; bin/ (language servers and tools it downloads and runs) is
// read-only over it. State and cache stay in the sandbox home. The install is read-only.
func OpenCode() Tool {
	return Tool{
		Name:        "opencode",
		Description: "opencode: config read-only, data read-write (auth refresh, sessions) with bin/ read-only; install read-only",
		Detect: func(h Host) bool {
			return h.onPath("opencode") || h.exists(h.config("opencode").src) || h.exists(h.data("opencode").src)
		},
		Bindings: func(h Host) []Binding {
			bs := []Binding{h.config("opencode").bind(RO)}
			for _, v := range []string{"OPENCODE_CONFIG", "OPENCODE_CONFIG_DIR"} {
				if p, ok := h.usable(h.Env[v]); ok {
					bs = append(bs, p.bind(RO))
				}
			}
			bs = append(bs, h.ownDir(h.data("opencode"), guards{dirs: []string{"bin"}})...)
			return h.withExecutables(bs, "opencode")
		},
		Env: []string{"OPENCODE_CONFIG", "OPENCODE_CONFIG_DIR", "OPENCODE_CONFIG_CONTENT",
			"OPENCODE_DISABLE_AUTOUPDATE", "OPENCODE_DISABLE_LSP_DOWNLOAD"},
		Secrets: []string{"ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY",
			"GOOGLE_GENERATIVE_AI_API_KEY", "OPENROUTER_API_KEY"},
		Egress: []string{"opencode.ai", "models.dev", "api.anthropic.com", "console.anthropic.com",
			"api.openai.com", "openrouter.ai", "registry.npmjs.org"},
	}
}
