package tools

// Node exposes Node.js installed under the home — nvm, volta or fnm, and node itself
// when it sits in a hidden directory of the home — read-only, so node, npm and the
// packages installed globally with them run in the sandbox (`npm install -g` fails:
// the host runs those packages). A global npm prefix under the home (NPM_CONFIG_PREFIX)
// is bound read-only for the same reason.
//
// ~/.npmrc is never bound: it holds registry tokens. NPM_TOKEN and NODE_AUTH_TOKEN are
// declared as secrets instead (a project .npmrc refers to them as ${NPM_TOKEN}). The npm
// cache (~/.npm) is not bound: npm writes it, and a writable host cache could be
// poisoned; the sandbox home keeps its own.
func Node() Tool {
	return Tool{
		Name:        "node",
		Description: "Node.js and npm: nvm/volta/fnm and global packages under the home (read-only); no ~/.npmrc, no cache",
		Detect: func(h Host) bool {
			if h.onPath("node") || h.onPath("npm") {
				return true
			}
			for _, p := range nodeManagers(h) {
				if h.exists(p.src) {
					return true
				}
			}
			return false
		},
		Bindings: func(h Host) []Binding {
			var bs []Binding
			for _, p := range nodeManagers(h) {
				bs = append(bs, p.bind(RO))
			}
			if p, ok := h.usable(h.Env["NPM_CONFIG_PREFIX"]); ok && p.rel != "" {
				bs = append(bs, p.bind(RO))
			}
			return h.withExecutables(bs, "node", "npm")
		},
		Env: []string{"NVM_DIR", "VOLTA_HOME", "FNM_DIR", "NPM_CONFIG_REGISTRY", "NPM_CONFIG_PREFIX",
			"NODE_OPTIONS", "NODE_EXTRA_CA_CERTS"},
		Secrets: []string{"NPM_TOKEN", "NODE_AUTH_TOKEN"},
		Egress:  []string{"registry.npmjs.org", "registry.yarnpkg.com", "nodejs.org"},
	}
}

// nodeManagers are the version managers' directories (scripts the shell rc sources,
// and the installed versions).
func nodeManagers(h Host) []place {
	return []place{
		h.envPlace("NVM_DIR", h.home(".nvm")),
		h.envPlace("VOLTA_HOME", h.home(".volta")),
		h.envPlace("FNM_DIR", h.data("fnm")),
	}
}
