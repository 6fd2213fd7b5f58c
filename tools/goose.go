package tools

// gooseState is what goose writes in ~/.config/goose, the sandbox's own: its command
// history and the tool permissions it saves.
func gooseState() []State {
	return []State{{Path: "history.txt"}, {Path: "permissions", Dir: true}}
}

// Goose exposes Block's goose. Its configuration (~/.config/goose: config.yaml with the
// extensions it starts, that is MCP server commands, permission.yaml, the tool
// permissions it saved, prompts, .goosehints, and secrets.yaml where the keyring is
// off) is read-only but its command history (history.txt), which the sandbox keeps
// in its own copy. Its sessions (~/.local/share/goose) and logs (~/.local/state/goose)
// are the sandbox's own. The install is read-only.
func Goose() Tool {
	return Tool{
		Name:        "goose",
		Description: "goose: ~/.config/goose read-only, sessions and logs the sandbox's own; install read-only",
		Detect: func(h Host) bool {
			return h.onPath("goose") || h.exists(h.config("goose").src)
		},
		Bindings: func(h Host) []Binding {
			bs := h.ownDir(h.config("goose"), gooseState()...)
			return h.withExecutables(bs, "goose")
		},
		Env: []string{"GOOSE_PROVIDER", "GOOSE_MODEL", "GOOSE_MODE", "GOOSE_TEMPERATURE", "GOOSE_MAX_TURNS",
			"GOOSE_LEAD_PROVIDER", "GOOSE_LEAD_MODEL", "GOOSE_DISABLE_KEYRING", "OPENAI_HOST", "OLLAMA_HOST"},
		Secrets: []string{"ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GOOGLE_API_KEY", "OPENROUTER_API_KEY",
			"GROQ_API_KEY", "DATABRICKS_TOKEN"},
		Egress: []string{"api.anthropic.com", "api.openai.com", "generativelanguage.googleapis.com", "openrouter.ai",
			"api.groq.com"},
		// GOOGLE_API_KEY is not held outside: how goose sends it is not documented.
		Keys: append(anthropicKeys("")[:1], bearer("OPENAI_API_KEY", "api.openai.com", "OPENAI_HOST"),
			bearer("OPENROUTER_API_KEY", "openrouter.ai", "")),
	}
}
