package tools

// piState is what pi writes in its agent directory, all of it the sandbox's own:
// sessions, and trust.json, the projects whose .pi extensions and settings the host's
// pi loads, so a sandbox that shared it could trust a project for the host.
func piState() []State {
	return []State{{Path: "sessions", Dir: true}, {Path: "trust.json"}}
}

// Pi exposes pi, the coding agent. Its agent directory (PI_CODING_AGENT_DIR, else
// ~/.pi/agent) is the sandbox's own copy (see ownDir): the host's settings.json,
// models.json, mcp.json, keybindings, instructions (AGENTS.md, SYSTEM.md),
// extensions (TypeScript it runs), skills, prompts and themes are read-only, and so is
// auth.json: besides keys and OAuth tokens it may hold shell commands that produce a
// key, which the host's pi runs. An OAuth refresh inside the sandbox is not kept.
// The install (an npm global) is read-only.
func Pi() Tool {
	return Tool{
		Name:        "pi",
		Description: "pi: ~/.pi/agent read-only (auth.json included), sessions the sandbox's own; install read-only",
		Detect: func(h Host) bool {
			return h.onPath("pi") || h.exists(piDir(h).src)
		},
		Bindings: func(h Host) []Binding {
			return h.withExecutables(h.ownDir(piDir(h), piState()...), "pi")
		},
		Env: []string{"PI_CODING_AGENT_DIR"},
		Secrets: []string{"ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY", "OPENROUTER_API_KEY",
			"GROQ_API_KEY", "DEEPSEEK_API_KEY"},
		Egress: []string{"api.anthropic.com", "api.openai.com", "generativelanguage.googleapis.com", "openrouter.ai",
			"api.groq.com", "api.deepseek.com", "registry.npmjs.org"},
		Keys: append(anthropicKeys("")[:1], bearer("OPENAI_API_KEY", "api.openai.com", ""), geminiKeys("")[0],
			bearer("OPENROUTER_API_KEY", "openrouter.ai", "")),
	}
}

func piDir(h Host) place { return h.envPlace("PI_CODING_AGENT_DIR", h.home(".pi/agent")) }
