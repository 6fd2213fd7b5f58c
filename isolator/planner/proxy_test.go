package planner

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/devsandbox/devsandbox/config"
	"github.com/devsandbox/devsandbox/egress"
	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/isolator/sockdir"
	"github.com/devsandbox/devsandbox/proxy/ca"
	"github.com/devsandbox/devsandbox/tools"
)

// fixedSocketDir is a Probe.SocketDir that chooses dir.
func fixedSocketDir(dir string) func(sockdir.Host, string, string) (string, error) {
	return func(sockdir.Host, string, string) (string, error) { return dir, nil }
}

// TestBuildProxy: in proxy mode the Plan is complete: the proxy's socket in the socket
// directory, its configuration (the session, the default, the push policy, the
// credentials by name), the publish directory, and the sandbox's proxy variables.
func TestBuildProxy(t *testing.T) {
	f := newFixture(t)
	cfg := f.load(t, "OPENAI_API_KEY=sk-real-value")
	cfg.Egress.Publish = []string{"8080:3000"}
	cfg.Proxy.GitPush, cfg.Proxy.GitSSH = []string{"agent/*"}, true
	cfg.Proxy.Credentials = []config.Credential{
		{Host: "api.openai.com", Header: "Authorization", ValueEnv: "OPENAI_API_KEY", Format: "Bearer {}", PlaceholderEnv: "OPENAI_API_KEY"},
		{Host: "unset.test", Header: "X-Key", ValueEnv: "UNSET_KEY"},
	}
	pr := probe(f.proj)
	pr.SocketDir = fixedSocketDir("/run/user/1000/devsandbox/id")
	p, _, err := Build(cfg, tools.Default(), pr, Request{Command: []string{"true"}, Session: "s1"})
	if err != nil {
		t.Fatal(err)
	}
	push, _ := egress.ParseRefPattern("agent/*")
	want := isolator.ProxyConfig{Session: "s1", Default: "allow", GitPush: []egress.RefPattern{push}, GitSSH: true,
		Credentials: []isolator.ProxyCredential{
			{Name: "OPENAI_API_KEY", Host: "api.openai.com", Header: "Authorization", Format: "Bearer {}", ValueEnv: "OPENAI_API_KEY", PlaceholderVar: "DEVSANDBOX_PLACEHOLDER_0"},
			{Name: "proxy.credentials[1]", Host: "unset.test", Header: "X-Key", ValueEnv: "UNSET_KEY"},
		}}
	if got := p.Proxy; got.Session != want.Session || got.Default != want.Default || !slices.Equal(got.GitPush, want.GitPush) || got.GitSSH != want.GitSSH || !slices.Equal(got.Credentials, want.Credentials) {
		t.Errorf("Proxy = %+v\nwant %+v", got, want)
	}
	e := p.Egress
	if e.SocketDir != "/run/user/1000/devsandbox/id" || e.Proxy.Unix != e.SocketDir+"/proxy-s1.sock" || e.PublishDir != e.SocketDir+"/publish-s1" || e.ProxyPolicy == "" {
		t.Errorf("Egress = %+v", e)
	}
	env := map[string]string{}
	for _, v := range p.Env {
		env[v.Name] = v.Value
	}
	if env["HTTPS_PROXY"] != "http://"+egress.SandboxProxyAddr || env["NO_PROXY"] == "" {
		t.Errorf("proxy variables: %v", env)
	}
	if _, ok := env["OPENAI_API_KEY"]; ok {
		t.Error("the real variable is in the plan's environment")
	}
	// The sandbox gets a placeholder, a secret of the plan; the proxy finds the real
	// value under the credential's own name.
	ph := p.HostEnv["DEVSANDBOX_PLACEHOLDER_0"]
	if !slices.Equal(p.Secrets, []isolator.Secret{{Name: "OPENAI_API_KEY", EnvSource: "DEVSANDBOX_PLACEHOLDER_0"}}) || !strings.HasPrefix(ph, "devsandbox-placeholder-") {
		t.Errorf("secrets %+v, placeholder %q", p.Secrets, ph)
	}
	if _, ok := cfg.Host.Vars["DEVSANDBOX_PLACEHOLDER_0"]; ok {
		t.Error("Build changed the config's host variables")
	}
	names := p.HostEnvNames()
	for _, n := range []string{"OPENAI_API_KEY", "UNSET_KEY", "DEVSANDBOX_PLACEHOLDER_0", "SSL_CERT_FILE"} {
		if !slices.Contains(names, n) {
			t.Errorf("HostEnvNames %q lacks %s", names, n)
		}
	}

	cfg.Egress.Mode, cfg.Egress.Allow = "allowlist", []string{"192.0.2.1"}
	if p, _, err = Build(cfg, tools.Default(), pr, Request{Command: []string{"true"}}); err != nil || p.Proxy.Default != "deny" || len(p.Proxy.Session) != 12 {
		t.Errorf("allowlist: %+v, %v", p.Proxy, err)
	}
}

// TestBuildProxyMITM: under proxy.mitm the plan gets the CA bundle (system CAs and the
// project's CA, never its key) at CABundlePath and the variables naming it, and the CA
// itself in HostEnv for the proxy; the CA is created 0600 in the state directory.
func TestBuildProxyMITM(t *testing.T) {
	f := newFixture(t)
	cfg := f.load(t)
	cfg.Proxy.MITM = true
	pr := probe(f.proj)
	pr.SocketDir = fixedSocketDir("/run/x")
	p, _, err := Build(cfg, tools.Default(), pr, Request{Command: []string{"true"}})
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(p.StateDir, ca.FileName))
	if err != nil || fi.Mode() != 0o600 {
		t.Fatalf("CA file: %v, %v", fi, err)
	}
	c, err := ca.Load(filepath.Join(p.StateDir, ca.FileName))
	if err != nil {
		t.Fatal(err)
	}
	var bundle []byte
	var parts []isolator.ContentPart
	for _, m := range p.Mounts {
		if m.Dest == CABundlePath && m.Kind == isolator.Data {
			bundle, parts = m.Content, m.Parts
		}
	}
	if !strings.HasSuffix(string(bundle), string(c.CertPEM)) || strings.Contains(string(bundle), "PRIVATE KEY") {
		t.Errorf("bundle does not end with the CA certificate, or holds a key")
	}
	sys, sysFile := systemBundle(cfg.Host, pr)
	if len(sys) > 0 && !strings.HasPrefix(string(bundle), string(sys)) {
		t.Error("bundle does not keep the system CAs")
	}
	// The parts a --dry-run script rebuilds the bundle from: the system bundle's file
	// and the CA file's certificate, read as the script reads them, give the bundle.
	want := []isolator.ContentPart{{File: filepath.Join(p.StateDir, ca.FileName), CertOnly: true}}
	if sysFile != "" {
		want = append([]isolator.ContentPart{{File: sysFile}}, want...)
	}
	if !slices.Equal(parts, want) {
		t.Errorf("parts %+v, want %+v", parts, want)
	}
	if got := rebuild(t, parts); got != string(bundle) {
		t.Errorf("the parts give %d bytes, the bundle is %d", len(got), len(bundle))
	}
	if p.HostEnv[isolator.ProxyCAVar] != string(c.PEM()) || !p.Proxy.MITM {
		t.Error("the proxy does not get the CA")
	}
	for _, e := range p.Env {
		if slices.Contains(caBundleEnv, e.Name) && e.Value != CABundlePath {
			t.Errorf("%s = %q", e.Name, e.Value)
		}
	}
}

// TestBuildDryRunWritesNothing: a --dry-run's Plan is complete, and building it writes
// no file: no proxy CA, no mask scan cache, no socket directory.
func TestBuildDryRunWritesNothing(t *testing.T) {
	f := newFixture(t)
	writeFile(t, f.proj+"/.env", "SECRET=1\n")
	cfg := f.load(t)
	cfg.Proxy.MITM = true
	cfg.Egress.Publish = []string{"8080:3000"}
	before := tree(t, f.root)
	p, _, err := Build(cfg, tools.Default(), probe(f.proj), Request{Command: []string{"true"}, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if after := tree(t, f.root); !slices.Equal(before, after) {
		t.Errorf("a dry run wrote:\nbefore %q\nafter  %q", before, after)
	}
	if p.Egress.Proxy.Unix == "" || p.Egress.PublishDir == "" || p.Proxy.Session == "" {
		t.Errorf("incomplete plan: %+v", p.Egress)
	}
	if _, ok := p.HostEnv[isolator.ProxyCAVar]; ok {
		t.Error("a CA was made up for the dry run")
	}
	// With no CA yet, the bundle's last part is the note saying where it will be.
	for _, m := range p.Mounts {
		if m.Dest == CABundlePath && rebuild(t, m.Parts) != string(m.Content) {
			t.Errorf("the parts %+v do not give the bundle", m.Parts)
		}
	}
}

// rebuild reads parts as a --dry-run script does (cat, or sed of the certificate's
// lines) and returns what they give.
func rebuild(t *testing.T, parts []isolator.ContentPart) string {
	t.Helper()
	var b strings.Builder
	for _, pt := range parts {
		if pt.File == "" {
			b.WriteString(pt.Text)
			continue
		}
		data, err := os.ReadFile(pt.File)
		if err != nil {
			t.Fatal(err)
		}
		if !pt.CertOnly {
			b.Write(data)
			continue
		}
		in := false
		for _, l := range strings.SplitAfter(string(data), "\n") {
			if strings.TrimSuffix(l, "\n") == "-----BEGIN CERTIFICATE-----" {
				in = true
			}
			if in {
				b.WriteString(l)
			}
			if strings.TrimSuffix(l, "\n") == "-----END CERTIFICATE-----" {
				in = false
			}
		}
	}
	return b.String()
}

// tree lists every path below root.
func tree(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	err := filepath.Walk(root, func(path string, _ os.FileInfo, err error) error {
		out = append(out, path)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestBuildSSHAgentRelay: the ssh tool's agent binding shows the sandbox the session's
// relay socket in the socket directory, never the host's agent socket, in every
// egress mode (none included, which otherwise chooses no socket directory).
func TestBuildSSHAgentRelay(t *testing.T) {
	f := newFixture(t)
	agent := filepath.Join(f.root, "agent.sock")
	if err := os.WriteFile(agent, nil, 0o600); err != nil { // exists is all the planner checks
		t.Fatal(err)
	}
	cfg := f.load(t, "SSH_AUTH_SOCK="+agent)
	pr := probe(f.proj)
	pr.LookPath = func(name string) bool { return name == "ssh" }
	pr.SocketDir = fixedSocketDir("/run/user/1000/devsandbox/id")
	p, _, err := Build(cfg, tools.Default(), pr, Request{Command: []string{"true"}, Session: "s1"})
	if err != nil {
		t.Fatal(err)
	}
	want := isolator.AgentRelay{Upstream: agent, Socket: "/run/user/1000/devsandbox/id/agent/s1.sock"}
	if p.SSHAgent != want {
		t.Errorf("SSHAgent = %+v, want %+v", p.SSHAgent, want)
	}
	var binds []isolator.Mount
	for _, m := range p.Mounts {
		if m.Dest == tools.AgentSocket || m.Source == agent {
			binds = append(binds, m)
		}
	}
	wantBind := isolator.Mount{Kind: isolator.Bind, Source: want.Socket, Dest: tools.AgentSocket, Why: "tool ssh"}
	if len(binds) != 1 || !reflect.DeepEqual(binds[0], wantBind) {
		t.Errorf("the agent's mounts = %+v, want only %+v", binds, wantBind)
	}
}

// A credential's placeholder made before the plan (bwrap's early start) is the plan's
// when it has a placeholder's form; anything else, or none, gets a fresh one.
func TestRequestPlaceholder(t *testing.T) {
	made := NewPlaceholder()
	if !strings.HasPrefix(made, "devsandbox-placeholder-") || len(made) != len("devsandbox-placeholder-")+48 || made == NewPlaceholder() {
		t.Fatalf("NewPlaceholder: %q", made)
	}
	r := Request{Placeholders: map[string]string{
		"DEVSANDBOX_PLACEHOLDER_0": made,
		"DEVSANDBOX_PLACEHOLDER_1": "guessable",
		"DEVSANDBOX_PLACEHOLDER_2": "devsandbox-placeholder-" + strings.Repeat("0", 47) + "g",
	}}
	if got := r.placeholder("DEVSANDBOX_PLACEHOLDER_0"); got != made {
		t.Errorf("the placeholder made before the plan: %q, want %q", got, made)
	}
	for _, name := range []string{"DEVSANDBOX_PLACEHOLDER_1", "DEVSANDBOX_PLACEHOLDER_2", "DEVSANDBOX_PLACEHOLDER_3"} {
		if got := r.placeholder(name); got == r.Placeholders[name] || !strings.HasPrefix(got, "devsandbox-placeholder-") {
			t.Errorf("%s: %q, want a fresh placeholder", name, got)
		}
	}
}
