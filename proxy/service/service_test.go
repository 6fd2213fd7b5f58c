package service

import (
	"bufio"
	"encoding/json"
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

	"github.com/devsandbox/devsandbox/egress"
	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/isolator/handoff"
	"github.com/devsandbox/devsandbox/proxy/ca"
)

// fakeProxyEnv makes the test binary act as devsandbox-proxy (see fakeProxy).
const fakeProxyEnv = "DEVSANDBOX_TEST_FAKE_PROXY"

func TestMain(m *testing.M) {
	if mode := os.Getenv(fakeProxyEnv); mode != "" {
		os.Exit(handoff.Serve(func(j *handoff.Job) handoff.Result { return fakeProxy(mode, j) }, nil, nil, os.Stderr))
	}
	os.Exit(m.Run())
}

// fakeProxy keeps devsandbox-proxy's side of the contract: it answers "ok" on every
// connection to its listener and, in mode "serve", returns once the control pipe ends,
// after writing the file its settings name as LogDir; in mode "stubborn" it ignores
// the control pipe; in mode "env" it writes its environment next to that file.
func fakeProxy(mode string, j *handoff.Job) handoff.Result {
	var s Settings
	if err := json.Unmarshal(j.Settings, &s); err != nil {
		return handoff.Result{Code: 2}
	}
	serve := func(ln net.Listener) {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			io.WriteString(c, "ok\n")
			c.Close()
		}
	}
	if s.NoSocket { // descriptor 3 is the listener channel
		go ReceiveListeners(j.Files(1)[0], func(ln net.Listener) { go serve(ln) }, func(error) {})
	} else {
		ln, err := net.FileListener(j.Files(1)[0])
		if err != nil {
			return handoff.Result{Code: 2}
		}
		go serve(ln)
	}
	if mode == "stubborn" {
		time.Sleep(time.Hour)
	}
	if mode == "env" {
		if err := os.WriteFile(s.LogDir+".env", []byte(strings.Join(os.Environ(), "\n")), 0o600); err != nil {
			return handoff.Result{Code: 1}
		}
	}
	<-j.Ctx.Done()
	if err := os.WriteFile(s.LogDir, []byte("control pipe ended\n"), 0o600); err != nil {
		return handoff.Result{Code: 1}
	}
	return handoff.Result{}
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

// fakePlan is a proxy-mode plan whose audit log "directory" is marker.
func fakePlan(sock, marker string) *isolator.Plan {
	return &isolator.Plan{StateDir: marker, Egress: egress.Rules{Mode: egress.Proxy, Proxy: egress.Endpoint{Unix: sock}},
		Proxy: isolator.ProxyConfig{Session: "s1", Default: "allow"}}
}

// TestStart: the socket is there (0600, in a 0700 directory) and answers as soon as
// Start returns; stop ends the control pipe, waits for the proxy and removes the
// socket.
func TestStart(t *testing.T) {
	dir := shortTemp(t)
	sock, marker := filepath.Join(dir, "run", "p.sock"), filepath.Join(dir, "stopped")
	p := fakePlan(sock, marker)
	p.HostEnv = map[string]string{fakeProxyEnv: "serve"}
	stop, err := spawn(os.Args[0], SettingsOf(p), []string{fakeProxyEnv + "=serve"}, sock, Options{Bound: 5 * time.Second, Stderr: os.Stderr})
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
	if b, err := os.ReadFile(marker); string(b) != "control pipe ended\n" {
		t.Errorf("the proxy did not see the control pipe end before stop returned: %q, %v", b, err)
	}
	if _, err := os.Lstat(sock); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket left after stop: %v", err)
	}
}

// TestStartEnvironment: devsandbox-proxy gets exactly the environment it is given,
// none of devsandbox's own (which holds the user's secrets).
func TestStartEnvironment(t *testing.T) {
	t.Setenv("DEVSANDBOX_TEST_HOST_SECRET", "must-not-pass")
	dir := shortTemp(t)
	sock, marker := filepath.Join(dir, "p.sock"), filepath.Join(dir, "stopped")
	env := []string{fakeProxyEnv + "=env", "DEVSANDBOX_CREDENTIAL_0=v"}
	stop, err := spawn(os.Args[0], SettingsOf(fakePlan(sock, marker)), env, sock, Options{Bound: 5 * time.Second, Stderr: os.Stderr})
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

// TestStartKillsAfterBound: a proxy that does not exit is killed once the bound has
// passed.
func TestStartKillsAfterBound(t *testing.T) {
	sock := filepath.Join(shortTemp(t), "p.sock")
	stop, err := spawn(os.Args[0], Settings{}, []string{fakeProxyEnv + "=stubborn"}, sock, Options{Bound: 200 * time.Millisecond, Stderr: os.Stderr})
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

// TestStartFailsClosed: when the proxy cannot be started, its socket stops listening
// (connections are refused, none waits forever) and stop still cleans up.
func TestStartFailsClosed(t *testing.T) {
	sock := filepath.Join(shortTemp(t), "p.sock")
	stop, err := spawn(filepath.Join(shortTemp(t), Program), Settings{}, nil, sock, Options{Bound: time.Second, Stderr: io.Discard})
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

func TestStartWithoutProgram(t *testing.T) {
	// The test binary has no devsandbox-proxy next to it.
	if _, err := Start(fakePlan("/nonexistent/p.sock", ""), Options{}); !errors.Is(err, isolator.ErrProtection) {
		t.Errorf("Start without devsandbox-proxy: %v, want ErrProtection", err)
	}
}

// TestSettingsAndEnviron: the settings name the secrets' variables and hold none of
// them; the environment holds the CA, the credentials' values (a value_file read now)
// and placeholders (a shared one once), and the host's TLS roots, nothing else.
func TestSettingsAndEnviron(t *testing.T) {
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "npm-token")
	os.WriteFile(tokenFile, []byte("npm_FILEtoken\n"), 0o600)
	c, err := ca.LoadOrCreate(dir, "p", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	parse := func(ss ...string) []egress.Entry {
		es, _ := egress.ParseEntries(ss)
		return es
	}
	push, _ := egress.ParseRefPattern("agent/*")
	p := &isolator.Plan{StateDir: "/st/proj-1",
		Egress: egress.Rules{Mode: egress.Proxy, Allow: parse("example.com", "10.0.0.0/8:22"), Deny: parse("evil.test"),
			ProxyAllow: parse("api.tool.test", "example.com", "api.tool.test")},
		Proxy: isolator.ProxyConfig{Session: "s1", Default: "deny", MITM: true, GitPush: []egress.RefPattern{push}, GitSSH: true,
			Credentials: []isolator.ProxyCredential{
				{Name: "GITHUB_TOKEN", Host: "api.github.com", Header: "Authorization", Format: "Bearer {}", ValueEnv: "GITHUB_TOKEN", PlaceholderVar: "DEVSANDBOX_PLACEHOLDER_0"},
				{Name: "proxy.credentials[1]", Host: "registry.npmjs.org", Header: "Authorization", Format: "Bearer {}", ValueFile: tokenFile},
				{Name: "proxy.credentials[2]", Host: "unset.test", Header: "X-Key", ValueEnv: "UNSET_KEY"},
				// The same key held for a second host shares the placeholder.
				{Name: "GITHUB_TOKEN", Host: "uploads.github.com", Header: "Authorization", Format: "Bearer {}", ValueEnv: "GITHUB_TOKEN", PlaceholderVar: "DEVSANDBOX_PLACEHOLDER_0"},
			}},
		HostEnv: map[string]string{"GITHUB_TOKEN": "ghp_ENVtoken", "SSL_CERT_FILE": "/etc/corp.pem", "HOME": "/home/u",
			isolator.ProxyCAVar: string(c.PEM()), "DEVSANDBOX_PLACEHOLDER_0": "ph-0"},
	}
	s := SettingsOf(p)
	b, _ := json.Marshal(s)
	want := `{"session":"s1","logDir":"/st/proj-1","default":"deny","allow":[` +
		`{"Host":"example.com","Wildcard":false,"Prefix":"","Port":0},{"Host":"","Wildcard":false,"Prefix":"10.0.0.0/8","Port":22},` +
		`{"Host":"api.tool.test","Wildcard":false,"Prefix":"","Port":0}],"deny":[{"Host":"evil.test","Wildcard":false,"Prefix":"","Port":0}],` +
		`"gitPush":["refs/heads/agent/*"],"gitSSH":true,"mitm":true,"credentials":[` +
		`{"name":"GITHUB_TOKEN","host":"api.github.com","header":"Authorization","format":"Bearer {}","valueVar":"DEVSANDBOX_CREDENTIAL_0","placeholderVar":"DEVSANDBOX_PLACEHOLDER_0"},` +
		`{"name":"proxy.credentials[1]","host":"registry.npmjs.org","header":"Authorization","format":"Bearer {}","valueVar":"DEVSANDBOX_CREDENTIAL_1"},` +
		`{"name":"proxy.credentials[2]","host":"unset.test","header":"X-Key","valueVar":"DEVSANDBOX_CREDENTIAL_2"},` +
		`{"name":"GITHUB_TOKEN","host":"uploads.github.com","header":"Authorization","format":"Bearer {}","valueVar":"DEVSANDBOX_CREDENTIAL_3","placeholderVar":"DEVSANDBOX_PLACEHOLDER_0"}]}`
	if string(b) != want {
		t.Errorf("settings:\n got %s\nwant %s", b, want)
	}
	env, err := Environ(p, os.ReadFile)
	wantEnv := []string{"SSL_CERT_FILE=/etc/corp.pem", "DEVSANDBOX_PROXY_CA=" + string(c.PEM()),
		"DEVSANDBOX_CREDENTIAL_0=ghp_ENVtoken", "DEVSANDBOX_PLACEHOLDER_0=ph-0", "DEVSANDBOX_CREDENTIAL_1=npm_FILEtoken", "DEVSANDBOX_CREDENTIAL_3=ghp_ENVtoken"}
	if err != nil || !slices.Equal(env, wantEnv) {
		t.Errorf("env: %v\n got %q\nwant %q", err, env, wantEnv)
	}
	p.Proxy.Credentials[1].ValueFile = filepath.Join(dir, "gone")
	if _, err := Environ(p, os.ReadFile); !errors.Is(err, isolator.ErrConfig) {
		t.Errorf("an unreadable value_file: %v, want ErrConfig", err)
	}
}
