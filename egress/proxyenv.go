package egress

// noProxy lists the destinations a sandboxed client reaches directly: its own loopback.
const noProxy = "localhost,127.0.0.1,::1"

// ProxyEnv returns the environment that points the common clients of a sandbox at the
// proxy URL (for example "http://127.0.0.1:3128", SandboxProxyAddr):
//   - HTTP_PROXY, HTTPS_PROXY, ALL_PROXY and their lower-case forms: curl, git (through
//     libcurl: http_proxy, HTTPS_PROXY, all_proxy), Go, Python, Rust, Deno, Bun;
//   - NO_PROXY, no_proxy: loopback only;
//   - npm_config_proxy, npm_config_https_proxy, npm_config_noproxy: npm, pnpm, yarn 1;
//   - YARN_HTTP_PROXY, YARN_HTTPS_PROXY: yarn 2+;
//   - PIP_PROXY: pip;
//   - NODE_USE_ENV_PROXY=1: Node's built-in http, https and fetch (Node 22.21+ and 24.5+);
//   - GLOBAL_AGENT_HTTP_PROXY, GLOBAL_AGENT_HTTPS_PROXY, GLOBAL_AGENT_NO_PROXY: older
//     Node programs that use global-agent.
//
// A URL that carries a credential (a TCP endpoint's session secret) makes the map a
// secret: it belongs in the sandbox's environment only and must not be printed.
func ProxyEnv(proxyURL string) map[string]string {
	u := proxyURL
	return map[string]string{
		"HTTP_PROXY":               u,
		"HTTPS_PROXY":              u,
		"ALL_PROXY":                u,
		"http_proxy":               u,
		"https_proxy":              u,
		"all_proxy":                u,
		"NO_PROXY":                 noProxy,
		"no_proxy":                 noProxy,
		"npm_config_proxy":         u,
		"npm_config_https_proxy":   u,
		"npm_config_noproxy":       noProxy,
		"YARN_HTTP_PROXY":          u,
		"YARN_HTTPS_PROXY":         u,
		"PIP_PROXY":                u,
		"NODE_USE_ENV_PROXY":       "1",
		"GLOBAL_AGENT_HTTP_PROXY":  u,
		"GLOBAL_AGENT_HTTPS_PROXY": u,
		"GLOBAL_AGENT_NO_PROXY":    noProxy,
	}
}
