package tools

// qwenState is what Qwen Code (a fork of Gemini CLI) writes in ~/.qwen. Shared with
// the host: the OAuth token it refreshes (oauth_creds.json). The sandbox keeps its own
// runtime output (tmp/: chats, checkpoints, shell history; history/: the checkpoints'
// git repositories; projects/, debug/, ide/, arena/), the tools it downloads (bin/,
// which the host's qwen would run), its ids and MCP OAuth tokens.
func qwenState() []State {
	st := []State{{Path: "oauth_creds.json", Shared: true}}
	for _, d := range []string{"tmp", "history", "projects", "debug", "ide", "arena", "bin"} {
		st = append(st, State{Path: d, Dir: true})
	}
	for _, f := range []string{"installation_id", "google_accounts.json", "mcp-oauth-tokens.json"} {
		st = append(st, State{Path: f})
	}
	return st
}

// Qwen exposes Qwen Code. ~/.qwen is the sandbox's own copy (see ownDir): the host's
// settings.json (MCP servers, hooks, tool commands), .env, QWEN.md, memory.md,
// commands, skills and extensions are read-only, and nothing the sandbox creates there reaches
// the host but oauth_creds.json. The install (usually an npm global) is read-only.
func Qwen() Tool {
	return Tool{
		Name:        "qwen",
		Description: "Qwen Code: ~/.qwen read-only but oauth_creds.json (shared) and its other state (the sandbox's own); install read-only",
		Detect: func(h Host) bool {
			return h.onPath("qwen") || h.exists(h.Home+"/.qwen")
		},
		Bindings: func(h Host) []Binding {
			return h.withExecutables(h.ownDir(h.home(".qwen"), qwenState()...), "qwen")
		},
		Env:     []string{"OPENAI_BASE_URL", "OPENAI_MODEL", "QWEN_MODEL"},
		Secrets: []string{"OPENAI_API_KEY", "DASHSCOPE_API_KEY"},
		Egress:  []string{"dashscope.aliyuncs.com", "dashscope-intl.aliyuncs.com", "chat.qwen.ai", "api.openai.com"},
		Keys:    []Key{bearer("OPENAI_API_KEY", "api.openai.com", "OPENAI_BASE_URL")},
	}
}
