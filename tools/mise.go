package tools

// Mise exposes mise read-only: its global configuration (which can define tasks, hooks
// and env commands the host runs), and the installed tools, their shims and plugins.
// mise's state (which config files are trusted) is not bound: trusting a project inside
// the sandbox stays inside it. Installing a tool from inside the sandbox fails where the
// host keeps its installs; the download cache is the sandbox's own.
func Mise() Tool {
	return Tool{
		Name:        "mise",
		Description: "mise: global config, installs, shims and plugins (read-only); trust state stays in the sandbox",
		Detect: func(h Host) bool {
			return h.onPath("mise") || h.exists(miseConfig(h).src) || h.exists(miseData(h).src)
		},
		Bindings: func(h Host) []Binding {
			bs := []Binding{miseConfig(h).bind(RO), h.home(".tool-versions").bind(RO)}
			if p, ok := h.usable(h.Env["MISE_GLOBAL_CONFIG_FILE"]); ok {
				bs = append(bs, p.bind(RO))
			}
			d := miseData(h)
			for _, sub := range []string{"installs", "shims", "plugins"} {
				bs = append(bs, d.join(sub).bind(RO))
			}
			return h.withExecutables(bs, "mise")
		},
		Env: []string{"MISE_DATA_DIR", "MISE_CONFIG_DIR", "MISE_GLOBAL_CONFIG_FILE", "MISE_ENV",
			"MISE_EXPERIMENTAL", "MISE_LOG_LEVEL", "MISE_PARANOID", "MISE_TRUSTED_CONFIG_PATHS"},
		Secrets: []string{"MISE_GITHUB_TOKEN"},
		Egress: []string{"mise.jdx.dev", "mise-versions.jdx.dev", "github.com", "api.github.com",
			"objects.githubusercontent.com", "release-assets.githubusercontent.com"},
	}
}

func miseConfig(h Host) place { return h.envPlace("MISE_CONFIG_DIR", h.config("mise")) }
func miseData(h Host) place   { return h.envPlace("MISE_DATA_DIR", h.data("mise")) }
