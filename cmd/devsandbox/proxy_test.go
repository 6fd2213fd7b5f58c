package main

import (
	"bufio"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/devsandbox/devsandbox/config"
	"github.com/devsandbox/devsandbox/egress"
	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/proxy/ca"
)

// fakeProxyEnv makes the test binary act as devsandbox-proxy (see fakeProxy).
const fakeProxyEnv = "DEVSANDBOX_TEST_FAKE_PROXY"

func TestMain(m *testing.M) {
	if mode := os.Getenv(fakeProxyEnv); mode != "" {
		os.Exit(fakeProxy(mode, os.Args[1:]))
	}
	os.Exit(m.Run())
}

// fakeProxy keeps devsandbox-proxy's side of the contract: it answers "ok" on every
// connection to fd 3 and, in mode "serve", exits once fd 4 ends, after writing the
// file named by its last argument; in mode "stubborn" it ignores the lifeline.
func fakeProxy(mode string, args []string) int {
	ln, err := net.FileListener(os.NewFile(3, "listener"))
	if err != nil {
		return 2
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			io.WriteString(c, "ok\n")
			c.Close()
		}
	}()
	if mode == "stubborn" {
		time.Sleep(time.Hour)
	}
	if mode == "env" { // report the environment it got
		if err := os.WriteFile(args[len(args)-1]+".env", []byte(strings.Join(os.Environ(), "\n")), 0o600); err != nil {
			return 1
		}
	}
	io.Copy(io.Discard, os.NewFile(4, "lifeline"))
	if err := os.WriteFile(args[len(args)-1], []byte("lifeline ended\n"), 0o600); err != nil {
		return 1
	}
	return 0
}

func TestProxyArgs(t *testing.T) {
	cfg := &config.Config{
		Egress: config.Egress{Allow: []string{"example.com", "10.0.0.0/8:22"}, Deny: []string{"evil.test"}},
		Proxy:  config.Proxy{Default: "allow"},
	}
	parse := func(ss ...string) []egress.Entry {
		es, _ := egress.ParseEntries(ss)
		return es
	}
	// The Plan's rules are the config's entries, parsed: the proxy gets those.
	p := &isolator.Plan{StateDir: "/st/proj-1", Egress: egress.Rules{Mode: egress.Proxy, Allow: parse(cfg.Egress.Allow...),
		Deny: parse(cfg.Egress.Deny...), ProxyAllow: parse("api.tool.test", "example.com", "api.tool.test")}}
	want := []string{"--session=s1", "--log-dir=/st/proj-1", "--default=allow",
		"--allow=example.com", "--allow=10.0.0.0/8:22", "--allow=api.tool.test", "--deny=evil.test"}
	if got := proxyArgs(p, cfg, "s1"); !slices.Equal(got, want) {
		t.Errorf("proxy mode:\n got %q\nwant %q", got, want)
	}
	p.Egress.Mode = egress.Allowlist
	want[2] = "--default=deny"
	if got := proxyArgs(p, cfg, "s1"); !slices.Equal(got, want) {
		t.Errorf("allowlist mode:\n got %q\nwant %q", got, want)
	}
	cfg.Proxy.GitPush, cfg.Proxy.GitSSH = []string{"agent/*", "refs/tags/v*"}, true
	want = append(want, "--git-push=agent/*", "--git-push=refs/tags/v*", "--git-ssh")
	if got := proxyArgs(p, cfg, "s1"); !slices.Equal(got, want) {
		t.Errorf("push policy:\n got %q\nwant %q", got, want)
	}
}

// shortTemp is a directory whose paths fit a Unix socket address.
func shortTemp(t *testing.T) string {
	dir, err := os.MkdirTemp("", "dsb")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// answer connects to sock and returns the first line it reads.
func answer(t *testing.T, sock string) string {
	t.Helper()
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	line, _ := bufio.NewReader(c).ReadString('\n')
	return line
}

// TestSpawnProxy: the socket is there (0600, in a 0700 directory) and answers as soon
// as spawnProxy returns; stop ends the lifeline, waits for the proxy and removes the
// socket.
func TestSpawnProxy(t *testing.T) {
	dir := shortTemp(t)
	sock, marker := filepath.Join(dir, "run", "p.sock"), filepath.Join(dir, "stopped")
	stop, err := spawnProxy(os.Args[0], []string{marker}, []string{fakeProxyEnv + "=serve"}, sock, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]os.FileMode{sock: os.ModeSocket | 0o600, filepath.Dir(sock): os.ModeDir | 0o700} {
		if fi, err := os.Stat(path); err != nil || fi.Mode() != want {
			t.Errorf("%s: %v, %v; want mode %v", path, fi, err, want)
		}
	}
	if line := answer(t, sock); line != "ok\n" {
		t.Errorf("the proxy answered %q", line)
	}
	stop()
	if b, err := os.ReadFile(marker); string(b) != "lifeline ended\n" {
		t.Errorf("the proxy did not see the lifeline end before stop returned: %q, %v", b, err)
	}
	if _, err := os.Lstat(sock); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket left after stop: %v", err)
	}
}

// TestSpawnProxyEnvironment: devsandbox-proxy gets exactly the environment it is
// given, none of devsandbox's own (which holds the user's secrets).
func TestSpawnProxyEnvironment(t *testing.T) {
	t.Setenv("DEVSANDBOX_TEST_HOST_SECRET", "must-not-pass")
	dir := shortTemp(t)
	sock, marker := filepath.Join(dir, "p.sock"), filepath.Join(dir, "stopped")
	env := []string{fakeProxyEnv + "=env", "DEVSANDBOX_CREDENTIAL_0=v"}
	stop, err := spawnProxy(os.Args[0], []string{marker}, env, sock, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	answer(t, sock)
	stop()
	got, err := os.ReadFile(marker + ".env")
	if err != nil || string(got) != strings.Join(env, "\n") {
		t.Errorf("the proxy's environment: %q, %v; want %q", got, err, env)
	}
}

// TestSpawnProxyKillsAfterBound: a proxy that does not exit is killed once the bound
// has passed.
func TestSpawnProxyKillsAfterBound(t *testing.T) {
	sock := filepath.Join(shortTemp(t), "p.sock")
	stop, err := spawnProxy(os.Args[0], nil, []string{fakeProxyEnv + "=stubborn"}, sock, 200*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if line := answer(t, sock); line != "ok\n" { // it runs
		t.Fatalf("the proxy answered %q", line)
	}
	start := time.Now()
	stop()
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("stop took %v with a bound of 200ms", d)
	}
	if _, err := os.Lstat(sock); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket left after stop: %v", err)
	}
}

// TestSpawnProxyFailsClosed: when the proxy cannot be started, its socket stops
// listening (connections are refused, none waits forever) and stop still cleans up.
func TestSpawnProxyFailsClosed(t *testing.T) {
	sock := filepath.Join(shortTemp(t), "p.sock")
	stop, err := spawnProxy(filepath.Join(shortTemp(t), proxyBinary), nil, nil, sock, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	refused := func() bool {
		c, err := net.Dial("unix", sock)
		if err == nil {
			c.Close()
		}
		return errors.Is(err, syscall.ECONNREFUSED)
	}
	for deadline := time.Now().Add(5 * time.Second); !refused(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the socket of a proxy that never started still accepts connections")
		}
	}
	stop()
	if _, err := os.Lstat(sock); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket left after stop: %v", err)
	}
}

func TestBesideSelfMissing(t *testing.T) {
	if _, err := besideSelf("devsandbox-no-such-program"); !errors.Is(err, isolator.ErrProtection) {
		t.Errorf("besideSelf of a missing program: %v, want ErrProtection", err)
	}
}

// TestProxyArgsCredentials: credentials and MITM are flags holding names only; their
// secrets are in the environment proxyEnv builds, with the host's TLS roots.
func TestProxyArgsCredentials(t *testing.T) {
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "npm-token")
	os.WriteFile(tokenFile, []byte("npm_FILEtoken\n"), 0o600)
	cfg := &config.Config{
		Host: config.Host{Vars: map[string]string{"GITHUB_TOKEN": "ghp_ENVtoken", "SSL_CERT_FILE": "/etc/corp.pem", "HOME": "/home/u"}},
		Proxy: config.Proxy{Default: "allow", MITM: true, Credentials: []config.Credential{
			{Host: "api.github.com", Header: "Authorization", ValueEnv: "GITHUB_TOKEN", Format: "Bearer {}", PlaceholderEnv: "GITHUB_TOKEN"},
			{Host: "registry.npmjs.org", Header: "Authorization", ValueFile: tokenFile, Format: "Bearer {}"},
			{Host: "unset.test", Header: "X-Key", ValueEnv: "UNSET_KEY"},
		}},
	}
	p := &isolator.Plan{StateDir: "/st/proj-1", Egress: egress.Rules{Mode: egress.Proxy}}
	want := []string{"--session=s1", "--log-dir=/st/proj-1", "--default=allow", "--mitm",
		`--credential={"name":"GITHUB_TOKEN","host":"api.github.com","header":"Authorization","format":"Bearer {}","value_env":"DEVSANDBOX_CREDENTIAL_0","placeholder_env":"DEVSANDBOX_PLACEHOLDER_0"}`,
		`--credential={"name":"proxy.credentials[1]","host":"registry.npmjs.org","header":"Authorization","format":"Bearer {}","value_env":"DEVSANDBOX_CREDENTIAL_1"}`,
		`--credential={"name":"proxy.credentials[2]","host":"unset.test","header":"X-Key","value_env":"DEVSANDBOX_CREDENTIAL_2"}`,
	}
	if got := proxyArgs(p, cfg, "s1"); !slices.Equal(got, want) {
		t.Errorf("args:\n got %q\nwant %q", got, want)
	}
	c, err := ca.LoadOrCreate(dir, "p", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	env, err := proxyEnv(cfg, &proxyPlan{ca: c, placeholders: []string{"ph-0", "", ""}}, os.ReadFile)
	wantEnv := []string{"SSL_CERT_FILE=/etc/corp.pem", "DEVSANDBOX_PROXY_CA=" + string(c.PEM()),
		"DEVSANDBOX_CREDENTIAL_0=ghp_ENVtoken", "DEVSANDBOX_PLACEHOLDER_0=ph-0", "DEVSANDBOX_CREDENTIAL_1=npm_FILEtoken"}
	if err != nil || !slices.Equal(env, wantEnv) {
		t.Errorf("env: %v\n got %q\nwant %q", err, env, wantEnv)
	}
}

// TestPlanProxyMITM: under proxy.mitm the plan gets the CA bundle (system CAs and the
// project's CA, never its key) at CABundlePath and the variables naming it; the CA
// key is created 0600 in the state directory. A placeholder_env replaces the variable
// the plan had with a placeholder delivered as a secret.
func TestPlanProxyMITM(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state", "proj-1")
	cfg := &config.Config{
		Host: config.Host{Vars: map[string]string{"HOME": "/home/u"}},
		Proxy: config.Proxy{MITM: true, Credentials: []config.Credential{
			{Host: "api.openai.com", Header: "Authorization", ValueEnv: "OPENAI_API_KEY", Format: "Bearer {}", PlaceholderEnv: "OPENAI_API_KEY"},
		}},
	}
	p := &isolator.Plan{StateDir: state, Project: isolator.Project{Name: "proj-1"}, Egress: egress.Rules{Mode: egress.Proxy},
		Env:     []isolator.EnvVar{{Name: "OPENAI_API_KEY", Value: "real", FromHost: true}, {Name: "SSL_CERT_FILE", Value: "/x"}},
		Secrets: []isolator.Secret{{Name: "OPENAI_API_KEY", EnvSource: "OPENAI_API_KEY"}},
		HostEnv: cfg.Host.Vars}
	pp, err := planProxy(p, cfg, "s1")
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(state, ca.FileName))
	if err != nil || fi.Mode() != 0o600 {
		t.Fatalf("CA file: %v, %v", fi, err)
	}
	var bundle []byte
	for _, m := range p.Mounts {
		if m.Dest == CABundlePath && m.Kind == isolator.Data {
			bundle = m.Content
		}
	}
	if !strings.HasSuffix(string(bundle), string(pp.ca.CertPEM)) || strings.Contains(string(bundle), "PRIVATE KEY") {
		t.Errorf("bundle does not end with the CA certificate, or holds a key")
	}
	if sys := systemBundle(cfg.Host); len(sys) > 0 && !strings.HasPrefix(string(bundle), string(sys)) {
		t.Error("bundle does not keep the system CAs")
	}
	env := map[string]isolator.EnvVar{}
	for _, e := range p.Env {
		env[e.Name] = e
	}
	for _, n := range caBundleEnv {
		if env[n].Value != CABundlePath {
			t.Errorf("%s = %q", n, env[n].Value)
		}
	}
	if _, ok := env["OPENAI_API_KEY"]; ok {
		t.Error("the real variable is still in the plan's environment")
	}
	wantSecrets := []isolator.Secret{{Name: "OPENAI_API_KEY", EnvSource: "DEVSANDBOX_PLACEHOLDER_0"}}
	if !slices.Equal(p.Secrets, wantSecrets) || p.HostEnv["DEVSANDBOX_PLACEHOLDER_0"] != pp.placeholders[0] || len(pp.placeholders[0]) < 32 {
		t.Errorf("secrets %+v, placeholder %q", p.Secrets, pp.placeholders)
	}
	if _, ok := cfg.Host.Vars["DEVSANDBOX_PLACEHOLDER_0"]; ok {
		t.Error("planProxy changed the config's host variables")
	}
}

// A socket left by a killed session (nothing accepts) is removed; a live one is kept.
func TestRemoveStaleSockets(t *testing.T) {
	dir := t.TempDir()
	stale, err := net.ListenUnix("unix", &net.UnixAddr{Name: filepath.Join(dir, "proxy-dead.sock"), Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	stale.SetUnlinkOnClose(false)
	stale.Close()
	live, err := net.Listen("unix", filepath.Join(dir, "proxy-live.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	old := time.Now().Add(-2 * time.Minute)
	for _, d := range []string{"publish-dead", "publish-live", "publish-young"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	deadPub, err := net.ListenUnix("unix", &net.UnixAddr{Name: filepath.Join(dir, "publish-dead", "80.sock"), Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	deadPub.SetUnlinkOnClose(false)
	deadPub.Close()
	livePub, err := net.Listen("unix", filepath.Join(dir, "publish-live", "80.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer livePub.Close()
	for _, d := range []string{"publish-dead", "publish-live"} {
		if err := os.Chtimes(filepath.Join(dir, d), old, old); err != nil {
			t.Fatal(err)
		}
	}
	removeStaleSockets(dir)
	for d, kept := range map[string]bool{"publish-dead": false, "publish-live": true, "publish-young": true} {
		if _, err := os.Lstat(filepath.Join(dir, d)); (err == nil) != kept {
			t.Errorf("%s: kept %v, want %v", d, err == nil, kept)
		}
	}
	if _, err := os.Lstat(filepath.Join(dir, "proxy-dead.sock")); !os.IsNotExist(err) {
		t.Errorf("stale socket kept: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(dir, "proxy-live.sock")); err != nil {
		t.Errorf("live socket removed: %v", err)
	}
}
