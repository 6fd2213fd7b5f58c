package tools

// claudeGuards are the entries of Claude Code's directory the host's Claude Code runs or
// obeys: settings (hooks, statusLine and apiKeyHelper commands, permissions), user
// instructions, commands, agents, skills, output styles, rules, hook scripts, plugins.
var claudeGuards = guards{
	files:   []string{"CLAUDE.md"},
	present: []string{"settings.json"},
	dirs:    []string{"commands", "agents", "skills", "output-styles", "rules", "hooks", "plugins"},
}

// Claude exposes Claude Code. Its directory (CLAUDE_CONFIG_DIR, else ~/.claude) is
// read-write: Claude Code refreshes its OAuth token in .credentials.json and keeps
// sessions, todos and history there. claudeGuards are read-only over it. The
// directory holds every project's transcripts and prompt history; set
// tools.claude.enabled = false and bind what you choose if that is too much.
//
// ~/.claude.json (onboarding state, per-project settings, user MCP servers) is not
// bound: Claude Code replaces it by rename, which fails on a bind-mounted file, and its
// MCP server commands run on the host. The sandbox home keeps its own, so Claude Code
// onboards once per project. (With CLAUDE_CONFIG_DIR set, the file lives in that
// directory and is shared with it.)
//
// The install is read-only: the native one (~/.local/bin/claude, a link into
// ~/.local/share/claude/versions), the older "local" one (~/.claude/local), or an npm
// global under the home (see executable).
func Claude() Tool {
	return Tool{
		Name:        "claude",
		Description: "Claude Code: ~/.claude read-write (OAuth refresh, sessions) with settings, hooks, commands, plugins read-only; install read-only",
		Detect: func(h Host) bool {
			return h.onPath("claude") || h.exists(claudeDir(h).src) || h.exists(h.Home+"/.claude.json")
		},
		Bindings: func(h Host) []Binding {
			d := claudeDir(h)
			bs := h.ownDir(d, claudeGuards)
			bs = append(bs, d.join("local").bind(RO), h.data("claude").bind(RO))
			return h.withExecutables(bs, "claude")
		},
		Env: []string{"CLAUDE_CONFIG_DIR", "ANTHROPIC_BASE_URL", "ANTHROPIC_MODEL", "ANTHROPIC_SMALL_FAST_MODEL",
			"ANTHROPIC_DEFAULT_OPUS_MODEL", "ANTHROPIC_DEFAULT_SONNET_MODEL", "ANTHROPIC_DEFAULT_HAIKU_MODEL",
			"CLAUDE_CODE_USE_BEDROCK", "CLAUDE_CODE_USE_VERTEX", "ANTHROPIC_VERTEX_PROJECT_ID", "CLOUD_ML_REGION",
			"CLAUDE_CODE_MAX_OUTPUT_TOKENS", "MAX_THINKING_TOKENS", "DISABLE_TELEMETRY", "DISABLE_ERROR_REPORTING",
			"DISABLE_AUTOUPDATER", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"},
		Secrets: []string{"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN"},
		Egress: []string{"api.anthropic.com", "statsig.anthropic.com", "console.anthropic.com",
			"claude.ai", "platform.claude.com"},
	}
}

func claudeDir(h Host) place { return h.envPlace("CLAUDE_CONFIG_DIR", h.home(".claude")) }
