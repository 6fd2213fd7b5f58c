package tools

// geminiGuards are the entries of ~/.gemini the host's Gemini CLI runs or obeys:
// settings (MCP servers, tool commands), the .env it loads, user instructions, custom
// commands and extensions.
var geminiGuards = guards{
	files:   []string{"GEMINI.md", ".env"},
	present: []string{"settings.json"},
	dirs:    []string{"commands", "extensions"},
}

// Gemini exposes Google's Gemini CLI. ~/.gemini is read-write: the CLI refreshes its
// OAuth token in oauth_creds.json and keeps checkpoints and history in tmp/.
// geminiGuards are read-only over it. The install (usually an npm global) is read-only.
func Gemini() Tool {
	return Tool{
		Name:        "gemini",
		Description: "Gemini CLI: ~/.gemini read-write (OAuth refresh, history) with settings, extensions read-only; install read-only",
		Detect: func(h Host) bool {
			return h.onPath("gemini") || h.exists(h.Home+"/.gemini")
		},
		Bindings: func(h Host) []Binding {
			return h.withExecutables(h.ownDir(h.home(".gemini"), geminiGuards), "gemini")
		},
		Env: []string{"GEMINI_MODEL", "GOOGLE_CLOUD_PROJECT", "GOOGLE_CLOUD_LOCATION",
			"GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_GENAI_USE_GCA"},
		Secrets: []string{"GEMINI_API_KEY", "GOOGLE_API_KEY"},
		Egress: []string{"generativelanguage.googleapis.com", "cloudcode-pa.googleapis.com",
			"oauth2.googleapis.com", "accounts.google.com", "www.googleapis.com"},
	}
}
