package tools

// opencodeState is what opencode writes in its data directory, all of it the sandbox's
// own: sessions (storage/), snapshot/ (git directories the host's opencode runs git
// on), logs, MCP OAuth tokens, and the language servers it downloads (bin/, run by the
// host's opencode).
func opencodeState() []State {
	st := []State{{Path: "mcp-auth.json"}}
	for _, d := range []string{"storage", "snapshot", "log", "bin", "tool-output"} {
		st = append(st, State{Path: d, Dir: true})
	}
	return st
}

// OpenCode exposes opencode. Its configuration (~/.config/opencode: providers, MCP
// servers, agents, commands, JS plugins) is read-only, with OPENCODE_CONFIG and
// OPENCODE_CONFIG_DIR when set. Its data directory (~/.local/share/opencode) is the
// sandbox's own copy (see ownDir) with the host's entries read-only. auth.json is not
// shared writable: besides keys and OAuth tokens it holds "wellknown" entries, URLs the
// host's opencode fetches configuration (MCP server commands included) from; an OAuth
// token refreshed inside the sandbox is not kept. State and cache stay in the sandbox
// home. The install is read-only.
func OpenCode() Tool {
	return Tool{
		Name:        "opencode",
		Description: "opencode: config and data read-only (auth.json included), its state the sandbox's own; install read-only",
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
			bs = append(bs, h.ownDir(h.data("opencode"), opencodeState()...)...)
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
