package proxy

import (
	"net/url"
	"strings"
	"testing"
)

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
