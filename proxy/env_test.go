package proxy

import (
	"maps"
	"net/url"
	"strings"
	"testing"
)

func TestEnvFor(t *testing.T) {
	u := "http://devsandbox:s3cret@127.0.0.1:3128"
	want := map[string]string{
		"HTTP_PROXY": u, "HTTPS_PROXY": u, "ALL_PROXY": u, "http_proxy": u, "https_proxy": u, "all_proxy": u,
		"NO_PROXY": "localhost,127.0.0.1,::1", "no_proxy": "localhost,127.0.0.1,::1",
		"npm_config_proxy": u, "npm_config_https_proxy": u, "npm_config_noproxy": "localhost,127.0.0.1,::1",
		"YARN_HTTP_PROXY": u, "YARN_HTTPS_PROXY": u, "PIP_PROXY": u, "NODE_USE_ENV_PROXY": "1",
		"GLOBAL_AGENT_HTTP_PROXY": u, "GLOBAL_AGENT_HTTPS_PROXY": u, "GLOBAL_AGENT_NO_PROXY": "localhost,127.0.0.1,::1",
	}
	if got := EnvFor(u); !maps.Equal(got, want) {
		t.Errorf("EnvFor:\n got %v\nwant %v", got, want)
	}
}

func TestServerEnv(t *testing.T) {
	srv, err := New(Config{Policy: mustPolicy(t, nil, nil, "allow")})
	if err != nil {
		t.Fatal(err)
	}
	if srv.URL() != "" || srv.Env() != nil {
		t.Errorf("before ListenTCP: URL %q, Env %v", srv.URL(), srv.Env())
	}
	addr, err := srv.ListenTCP("")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown(t.Context())
	u, err := url.Parse(srv.Env()["HTTPS_PROXY"])
	if err != nil {
		t.Fatal(err)
	}
	pass, _ := u.User.Password()
	if u.Host != addr || !strings.HasPrefix(addr, "127.0.0.1:") || u.User.Username() != "devsandbox" || len(pass) < 40 || pass != srv.secret {
		t.Errorf("proxy URL %v for %s", u.Redacted(), addr)
	}
	other, _ := New(Config{Policy: mustPolicy(t, nil, nil, "allow")})
	if other.secret == srv.secret {
		t.Error("two servers share a secret")
	}
}
