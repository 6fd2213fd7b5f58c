package tools

// geminiState is what Gemini CLI writes in ~/.gemini. Shared with the host: the OAuth
// token it refreshes (oauth_creds.json). The sandbox keeps its own tmp/ (chats,
// checkpoints, logs), history/ (the checkpoints' shadow git repositories, which the
// host's git would run), its account and id files, MCP OAuth tokens and caches.
func geminiState() []State {
	st := []State{{Path: "oauth_creds.json", Shared: true}}
	for _, d := range []string{"tmp", "history", "antigravity", "cache"} {
		st = append(st, State{Path: d, Dir: true})
	}
	for _, f := range []string{"google_accounts.json", "installation_id", "user_id", "mcp-oauth-tokens.json",
		"mcp-oauth-tokens-v2.json", "trustedFolders.json", "state.json"} {
		st = append(st, State{Path: f})
	}
	return st
}

// Gemini exposes Google's Gemini CLI. ~/.gemini is the sandbox's own copy (see ownDir):
// the host's settings.json (MCP servers, tool commands, hooks), .env, GEMINI.md,
// commands, extensions and policies are read-only, and nothing the sandbox creates
// there reaches the host but oauth_creds.json. The install (usually an npm global) is
// read-only.
func Gemini() Tool {
	return Tool{
		Name:        "gemini",
		Description: "Gemini CLI: ~/.gemini read-only but oauth_creds.json (shared) and its other state (the sandbox's own); install read-only",
		Detect: func(h Host) bool {
			return h.onPath("gemini") || h.exists(geminiDir(h).src)
		},
		Bindings: func(h Host) []Binding {
			return h.withExecutables(h.ownDir(geminiDir(h), geminiState()...), "gemini")
		},
		Env: []string{"GEMINI_CLI_HOME", "GEMINI_MODEL", "GOOGLE_CLOUD_PROJECT", "GOOGLE_CLOUD_LOCATION",
			"GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_GENAI_USE_GCA", "GOOGLE_GEMINI_BASE_URL"},
		Secrets: []string{"GEMINI_API_KEY", "GOOGLE_API_KEY"},
		Egress: []string{"generativelanguage.googleapis.com", "cloudcode-pa.googleapis.com",
			"oauth2.googleapis.com", "accounts.google.com", "www.googleapis.com"},
		Keys: geminiKeys("GOOGLE_GEMINI_BASE_URL"),
	}
}

// geminiDir is Gemini CLI's directory: .gemini in GEMINI_CLI_HOME, which stands for the
// home in every path it uses, else in the home.
func geminiDir(h Host) place {
	if p, ok := h.usable(h.Env["GEMINI_CLI_HOME"]); ok {
		return p.join(".gemini")
	}
	return h.home(".gemini")
}
