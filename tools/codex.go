package tools

// codexState is what Codex writes in its home. Shared with the host: auth.json, the
// ChatGPT OAuth token it refreshes (written in place). The sandbox keeps its own
// sessions, history, logs, shell snapshots, its state databases (*.sqlite), the skills
// it bundles (skills/.system; the user's skills stay read-only) and caches: Codex
// resumes sessions of every project from sessions/, so a shared one would let a
// sandbox hand the host's Codex a conversation of its making.
func codexState() []State {
	st := []State{{Path: "auth.json", Shared: true}}
	for _, d := range []string{"sessions", "archived_sessions", "log", "shell_snapshots", "tmp", ".tmp", "cache",
		"memories", "thread-writer-locks", "skills/.system"} {
		st = append(st, State{Path: d, Dir: true})
	}
	for _, f := range []string{"history.jsonl", "version.json", "models_cache.json", "internal_storage.json",
		"installation_id", ".sandbox_migration", ".personality_migration", "*.sqlite", "*.sqlite-shm", "*.sqlite-wal"} {
		st = append(st, State{Path: f})
	}
	return st
}

// Codex exposes OpenAI's Codex CLI. Its home (CODEX_HOME, else ~/.codex) is the
// sandbox's own copy (see ownDir): the host's config.toml (MCP servers, notify command,
// providers, profiles, sandbox policy, trusted projects), .env, AGENTS.md and
// AGENTS.override.md, prompts, rules, skills and plugins are read-only, and nothing the
// sandbox creates there (an AGENTS.override.md, a profile) reaches the host but
// auth.json. The install is read-only.
func Codex() Tool {
	return Tool{
		Name:        "codex",
		Description: "Codex CLI: ~/.codex read-only but auth.json (shared) and its other state (the sandbox's own); install read-only",
		Detect: func(h Host) bool {
			return h.onPath("codex") || h.exists(codexHome(h).src)
		},
		Bindings: func(h Host) []Binding {
			return h.withExecutables(h.ownDir(codexHome(h), codexState()...), "codex")
		},
		Env:     []string{"CODEX_HOME", "OPENAI_BASE_URL"},
		Secrets: []string{"OPENAI_API_KEY", "CODEX_API_KEY"},
		Egress:  []string{"api.openai.com", "chatgpt.com", "auth.openai.com"},
		Keys:    []Key{codexKey("OPENAI_API_KEY"), codexKey("CODEX_API_KEY")},
	}
}

// codexKey is a key as Codex sends it (codexEndpoints): to api.openai.com, or to
// the host of openai_base_url in its config.toml, and to every provider of its
// configuration that sends the key. Codex no longer reads OPENAI_BASE_URL (it warns
// and goes on to api.openai.com: openai/codex issue 16719), which qwen and others
// still do.
func codexKey(env string) Key {
	k := bearer(env, "api.openai.com", "")
	k.Endpoints = CodexConfig
	k.IgnoredEnv = "OPENAI_BASE_URL"
	return k
}

func codexHome(h Host) place { return h.envPlace("CODEX_HOME", h.home(".codex")) }
