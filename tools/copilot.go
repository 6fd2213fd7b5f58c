package tools

// copilotState is what GitHub Copilot CLI writes in its directory, all of it the
// sandbox's own: session history and workspace data (session-state/), the cross-session
// database, logs, IDE state, and its application state (config.json: sign-in,
// installed plugins, trusted folders), which the host's copilot obeys, so a sandbox
// that shared it could trust folders or install plugins for the host.
func copilotState() []State {
	st := []State{{Path: "config.json"}}
	for _, d := range []string{"session-state", "logs", "ide"} {
		st = append(st, State{Path: d, Dir: true})
	}
	for _, f := range []string{"session-store.db", "session-store.db-shm", "session-store.db-wal"} {
		st = append(st, State{Path: f})
	}
	return st
}

// Copilot exposes GitHub Copilot CLI. Its directory (COPILOT_HOME, else ~/.copilot)
// is the sandbox's own copy (see ownDir): the host's settings.json (hooks and other
// settings), mcp-config.json and lsp-config.json (commands it runs),
// permissions-config.json (tools and directories allowed per project),
// copilot-instructions.md, instructions/, agents/, skills/, hooks/, installed-plugins/
// and plugin-data/ are read-only, and nothing the sandbox creates there reaches the
// host. A sign-in stored in the host's config.json is not shared: inside, copilot uses
// COPILOT_GITHUB_TOKEN, GH_TOKEN or GITHUB_TOKEN, or a provider key (BYOK). The
// install (an npm global, a native binary per platform) is read-only; the package it
// unpacks on first start lands in the sandbox's cache.
//
// Only the BYOK provider key can be held outside (tools.copilot.key = "proxy"),
// toward the host of COPILOT_PROVIDER_BASE_URL: a GitHub token is sent to GitHub and
// Copilot's hosts in ways not documented.
func Copilot() Tool {
	return Tool{
		Name:        "copilot",
		Description: "GitHub Copilot CLI: ~/.copilot read-only but its state (the sandbox's own); install read-only",
		Detect: func(h Host) bool {
			return h.onPath("copilot") || h.exists(copilotHome(h).src)
		},
		Bindings: func(h Host) []Binding {
			return h.withExecutables(h.ownDir(copilotHome(h), copilotState()...), "copilot")
		},
		Env: []string{"COPILOT_HOME", "COPILOT_MODEL", "COPILOT_OFFLINE", "COPILOT_ALLOW_ALL", "COPILOT_AUTO_UPDATE",
			"COPILOT_GH_HOST", "GH_HOST", "COPILOT_PROVIDER_BASE_URL", "COPILOT_PROVIDER_TYPE", "COPILOT_PROVIDER_MODEL_ID",
			"COPILOT_PROVIDER_WIRE_API", "COPILOT_PROVIDER_WIRE_MODEL", "COPILOT_PROVIDER_AZURE_API_VERSION",
			"COPILOT_PROVIDER_MAX_PROMPT_TOKENS", "COPILOT_PROVIDER_MAX_OUTPUT_TOKENS", "COPILOT_CACHE_HOME", "COPILOT_PKG_CACHE_HOME"},
		Secrets: []string{"COPILOT_GITHUB_TOKEN", "GH_TOKEN", "GITHUB_TOKEN", "COPILOT_PROVIDER_API_KEY", "COPILOT_PROVIDER_BEARER_TOKEN"},
		Egress:  []string{"github.com", "api.github.com", "api.githubcopilot.com", "*.githubcopilot.com"},
		Keys: []Key{bearer("COPILOT_PROVIDER_API_KEY", "", "COPILOT_PROVIDER_BASE_URL"),
			bearer("COPILOT_PROVIDER_BEARER_TOKEN", "", "COPILOT_PROVIDER_BASE_URL")},
	}
}

func copilotHome(h Host) place { return h.envPlace("COPILOT_HOME", h.home(".copilot")) }
