package docker

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/devsandbox/devsandbox/egress"
	"github.com/devsandbox/devsandbox/isolator"
)

// The companion's request: the proxy's settings without a secret, the secrets by the
// names the settings give, the host's certificate roots as content (their paths are
// not the companion's), this machine's addresses for a local engine only, and the
// published ports; without a proxy, the ports alone.
func TestCompanionRequest(t *testing.T) {
	dir := t.TempDir()
	roots := filepath.Join(dir, "corp.pem")
	os.WriteFile(roots, []byte("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----"), 0o644)
	p := basePlan()
	p.Egress = egress.Rules{Mode: egress.Proxy, Forwards: []egress.Forward{{HostPort: 18080, SandboxPort: 3000}}}
	p.Proxy = isolator.ProxyConfig{Session: "5e55", Default: "deny",
		Credentials: []isolator.ProxyCredential{{Name: "GH", Host: "api.github.com", Header: "Authorization", ValueEnv: "GH_TOKEN"}}}
	p.HostEnv = map[string]string{"GH_TOKEN": "ghp_s3cret", "SSL_CERT_FILE": roots, "HOME": "/home/u"}
	req, err := companionRequest(p, true)
	if err != nil {
		t.Fatal(err)
	}
	if req.Session != "5e55" || req.Dir != companionDir || len(req.Publish) != 1 || req.Publish[0].Listen != 18080 || req.Publish[0].Sandbox != 3000 {
		t.Errorf("request: %+v", req)
	}
	if strings.Contains(string(req.Proxy), "ghp_s3cret") || !json.Valid(req.Proxy) {
		t.Errorf("settings: %s", req.Proxy)
	}
	if want := map[string]string{"DEVSANDBOX_CREDENTIAL_0": "ghp_s3cret"}; len(req.Secrets) != 1 || req.Secrets["DEVSANDBOX_CREDENTIAL_0"] != want["DEVSANDBOX_CREDENTIAL_0"] {
		t.Errorf("secrets: %v", req.Secrets)
	}
	if !strings.HasPrefix(string(req.Roots), "-----BEGIN CERTIFICATE-----") || !strings.HasSuffix(string(req.Roots), "\n") {
		t.Errorf("roots: %q", req.Roots)
	}
	if !slices.Contains(req.Refuse, "127.0.0.1") {
		t.Errorf("a local engine's request refuses %v, not this machine's addresses", req.Refuse)
	}
	if remote, _ := companionRequest(p, false); len(remote.Refuse) != 0 {
		t.Errorf("a remote engine's request refuses this machine's addresses: %v", remote.Refuse)
	}
	p.Egress.Mode = egress.None
	if req, err := companionRequest(p, true); err != nil || req.Proxy != nil || req.Secrets != nil || len(req.Publish) != 1 {
		t.Errorf("published ports only: %+v, %v", req, err)
	}
}
