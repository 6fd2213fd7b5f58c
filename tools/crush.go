package tools

// Crush exposes Charm's Crush. Its configuration (~/.config/crush: crush.json or
// crushrc, a Bash script it runs at start, with providers, LSP and MCP server
// commands) is read-only. Its data directory (~/.local/share/crush, where it keeps
// what it fetches and saves) is not bound: the sandbox home keeps its own, and keys
// come as secrets. Sessions live in the project (.crush/). The install is read-only.
func Crush() Tool {
	return Tool{
		Name:        "crush",
		Description: "Crush: ~/.config/crush read-only, its data the sandbox's own; install read-only",
		Detect: func(h Host) bool {
			return h.onPath("crush") || h.exists(h.config("crush").src)
		},
		Bindings: func(h Host) []Binding {
			return h.withExecutables([]Binding{h.config("crush").bind(RO)}, "crush")
		},
		Env: []string{"CRUSH_DISABLE_PROVIDER_AUTO_UPDATE", "CRUSH_DISABLE_METRICS"},
		Secrets: []string{"ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY", "OPENROUTER_API_KEY",
			"GROQ_API_KEY"},
		Egress: []string{"api.anthropic.com", "api.openai.com", "generativelanguage.googleapis.com", "openrouter.ai",
			"api.groq.com", "catwalk.charm.sh"},
		Keys: append(anthropicKeys("")[:1], bearer("OPENAI_API_KEY", "api.openai.com", ""), geminiKeys("")[0],
			bearer("OPENROUTER_API_KEY", "openrouter.ai", "")),
	}
}
