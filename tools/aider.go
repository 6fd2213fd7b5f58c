package tools

// Aider exposes aider's configuration files read-only and its install (a pipx or
// `uv tool` virtualenv linked from ~/.local/bin, with the interpreter it runs on).
// ~/.aider is not bound: it holds caches, analytics ids and OAuth keys
// (oauth-keys.env); the sandbox home keeps its own. API keys come as secrets.
func Aider() Tool {
	return Tool{
		Name:        "aider",
		Description: "aider: config files and install (read-only); keys as secrets",
		Detect: func(h Host) bool {
			return h.onPath("aider") || h.exists(h.Home+"/.aider.conf.yml") || h.exists(h.Home+"/.aider")
		},
		Bindings: func(h Host) []Binding {
			var bs []Binding
			for _, f := range []string{".aider.conf.yml", ".aider.model.settings.yml", ".aider.model.metadata.json"} {
				bs = append(bs, h.home(f).bind(RO))
			}
			bs = append(bs, uvPythonDir(h).bind(RO), pyenvRoot(h).bind(RO))
			return h.withExecutables(bs, "aider")
		},
		Env: []string{"AIDER_MODEL", "AIDER_WEAK_MODEL", "AIDER_EDITOR_MODEL", "AIDER_ARCHITECT",
			"AIDER_AUTO_COMMITS", "AIDER_DARK_MODE", "AIDER_ANALYTICS", "AIDER_CHECK_UPDATE",
			"OPENAI_API_BASE", "OLLAMA_API_BASE"},
		Secrets: []string{"ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY", "DEEPSEEK_API_KEY",
			"OPENROUTER_API_KEY", "GROQ_API_KEY"},
		Egress: []string{"api.anthropic.com", "api.openai.com", "generativelanguage.googleapis.com",
			"api.deepseek.com", "openrouter.ai", "api.groq.com", "pypi.org", "raw.githubusercontent.com"},
	}
}
