package tools

// claudeState is what Claude Code writes in its directory. Shared with the host: the
// OAuth token it refreshes (.credentials.json; written by rename, and in place where
// that fails, as on a bound file) and this project's sessions and transcripts
// (projects/<key>), unless that folder may be another directory's too (see
// claudeSessions). Its memory/ is the sandbox's own even then: the host's Claude Code
// loads memory/MEMORY.md into every conversation as the user's own notes, and unlike
// the project's CLAUDE.md (which the sandbox can write too) it lies outside the
// project, where no git diff shows a change. The sandbox keeps its own everything else it
// writes, the host's copy unseen: other projects' sessions, shell snapshots (sourced
// before the host's Bash tool commands), caches, locks, history, the settings it
// fetches (remote-settings.json, policy-limits.json), and with CLAUDE_CONFIG_DIR
// .claude.json (replaced by rename).
func claudeState(h Host) []State {
	st := []State{{Path: ".credentials.json", Shared: true}}
	if k := h.projectKey(200); k != "" && h.exists(claudeDir(h).src) {
		if ok, _, _ := h.claudeSessions(claudeDir(h), k); ok {
			st = append(st, State{Path: "projects/" + k, Dir: true, Shared: true}, State{Path: "projects/" + k + "/memory", Dir: true})
		}
	}
	for _, d := range []string{"projects", "todos", "statsig", "shell-snapshots", "session-env", "file-history",
		"plans", "debug", "telemetry", "backups", "sessions", "ide", "paste-cache", "image-cache", "cache",
		"tasks", "teams", "jobs", ".storage-write.lock"} {
		st = append(st, State{Path: d, Dir: true})
	}
	for _, f := range []string{"history.jsonl", "stats-cache.json", ".claude.json", "mcp-needs-auth-cache.json",
		"remote-settings.json", "policy-limits.json"} {
		st = append(st, State{Path: f})
	}
	return st
}

// Claude exposes Claude Code. Its directory (CLAUDE_CONFIG_DIR, else ~/.claude) is the
// sandbox's own copy (see ownDir): the host's settings (hooks, apiKeyHelper and
// statusLine commands, permissions), .config.json (MCP servers), CLAUDE.md, commands,
// agents, skills, plugins, workflows, keybindings and the older "local" install are
// read-only, and nothing the sandbox creates there reaches the host but claudeState's
// shared entries.
//
// ~/.claude.json (onboarding state, per-project settings, user MCP servers) is not
// bound: Claude Code replaces it by rename, which fails on a bind-mounted file, and its
// MCP server commands run on the host. The sandbox home keeps its own, so Claude Code
// onboards once per project.
//
// The install is read-only: the native one (~/.local/bin/claude, a link into
// ~/.local/share/claude/versions), or an npm global under the home (see executable).
//
// IS_SANDBOX=1 is set on every isolator: Claude Code refuses bypass-permissions mode
// (--dangerously-skip-permissions, --permission-mode bypassPermissions) to uid 0
// unless IS_SANDBOX is 1, and on a rootless Docker engine the command is the
// container's uid 0 (the user). The variable says what is true on every isolator;
// set everywhere, Claude Code behaves the same whichever runs it. env.set overrides it.
func Claude() Tool {
	return Tool{
		Name:        "claude",
		Description: "Claude Code: ~/.claude read-only but its OAuth token and this project's sessions (shared) and its other state, memory included (the sandbox's own); install read-only",
		Detect: func(h Host) bool {
			return h.onPath("claude") || h.exists(claudeDir(h).src) || h.exists(h.Home+"/.claude.json")
		},
		Bindings: func(h Host) []Binding {
			bs := h.ownDir(claudeDir(h), claudeState(h)...)
			bs = append(bs, h.data("claude").bind(RO))
			return h.withExecutables(bs, "claude")
		},
		Env: []string{"CLAUDE_CONFIG_DIR", "ANTHROPIC_BASE_URL", "ANTHROPIC_MODEL", "ANTHROPIC_SMALL_FAST_MODEL",
			"ANTHROPIC_DEFAULT_OPUS_MODEL", "ANTHROPIC_DEFAULT_SONNET_MODEL", "ANTHROPIC_DEFAULT_HAIKU_MODEL",
			"CLAUDE_CODE_USE_BEDROCK", "CLAUDE_CODE_USE_VERTEX", "ANTHROPIC_VERTEX_PROJECT_ID", "CLOUD_ML_REGION",
			"CLAUDE_CODE_MAX_OUTPUT_TOKENS", "MAX_THINKING_TOKENS", "DISABLE_TELEMETRY", "DISABLE_ERROR_REPORTING",
			"DISABLE_AUTOUPDATER", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"},
		Secrets: []string{"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN"},
		EnvSet:  func(Host) map[string]string { return map[string]string{"IS_SANDBOX": "1"} },
		Egress: []string{"api.anthropic.com", "statsig.anthropic.com", "console.anthropic.com",
			"claude.ai", "platform.claude.com"},
		// CLAUDE_CODE_OAUTH_TOKEN is not held outside: Claude Code refreshes it and
		// also sends it to claude.ai and platform.claude.com.
		Keys: anthropicKeys("ANTHROPIC_BASE_URL"),
		Warnings: func(h Host) []string {
			k := h.projectKey(200)
			if k == "" || !h.exists(claudeDir(h).src) {
				return nil
			}
			if ok, why, fix := h.claudeSessions(claudeDir(h), k); !ok {
				return []string{why + ": Claude Code keys its sessions and memory by a lossy name, so this sandbox keeps its own sessions folder and does not see or change the host's (claude --resume inside lists only the sandbox's sessions). To share them again, " + fix}
			}
			return nil
		},
	}
}

func claudeDir(h Host) place { return h.envPlace("CLAUDE_CONFIG_DIR", h.home(".claude")) }
