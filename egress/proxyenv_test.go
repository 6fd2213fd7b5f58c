package egress

import (
	"maps"
	"testing"
)

func TestProxyEnv(t *testing.T) {
	u := "http://devsandbox:s3cret@127.0.0.1:3128"
	want := map[string]string{
		"HTTP_PROXY": u, "HTTPS_PROXY": u, "ALL_PROXY": u, "http_proxy": u, "https_proxy": u, "all_proxy": u,
		"NO_PROXY": "localhost,127.0.0.1,::1", "no_proxy": "localhost,127.0.0.1,::1",
		"npm_config_proxy": u, "npm_config_https_proxy": u, "npm_config_noproxy": "localhost,127.0.0.1,::1",
		"YARN_HTTP_PROXY": u, "YARN_HTTPS_PROXY": u, "PIP_PROXY": u, "NODE_USE_ENV_PROXY": "1",
		"GLOBAL_AGENT_HTTP_PROXY": u, "GLOBAL_AGENT_HTTPS_PROXY": u, "GLOBAL_AGENT_NO_PROXY": "localhost,127.0.0.1,::1",
	}
	if got := ProxyEnv(u); !maps.Equal(got, want) {
		t.Errorf("ProxyEnv:\n got %v\nwant %v", got, want)
	}
}
