package tools

// codexGuards are the entries of Codex's home the host's Codex runs or obeys: config
// (MCP servers, notify command, providers, sandbox policy), .env, user instructions,
// prompts, command approval rules and skills. AGENTS.override.md is guarded only when
// present: an empty one would override AGENTS.md.
var codexGuards = guards{
	files:   []string{"config.toml", ".env", "AGENTS.md"},
	present: []string{"AGENTS.override.md"},
	dirs:    []string{"prompts", "rules", "skills"},
}

// Codex exposes OpenAI's Codex CLI. Its home (CODEX_HOME, else ~/.codex) is read-write:
// Codex refreshes its ChatGPT OAuth token in auth.json and keeps sessions, history and
// logs there. codexGuards are read-only over it, so marking a project trusted from
// inside the sandbox (a write to config.toml) fails. The install is read-only.
func Codex() Tool {
	return Tool{
		Name:        "codex",
		Description: "Codex CLI: ~/.codex read-write (OAuth refresh, sessions) with config, rules, prompts read-only; install read-only",
		Detect: func(h Host) bool {
			return h.onPath("codex") || h.exists(codexHome(h).src)
		},
		Bindings: func(h Host) []Binding {
			return h.withExecutables(h.ownDir(codexHome(h), codexGuards), "codex")
		},
		Env:     []string{"CODEX_HOME", "OPENAI_BASE_URL"},
		Secrets: []string{"OPENAI_API_KEY", "CODEX_API_KEY"},
		Egress:  []string{"api.openai.com", "chatgpt.com", "auth.openai.com"},
	}
}

func codexHome(h Host) place { return h.envPlace("CODEX_HOME", h.home(".codex")) }
