package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/devsandbox/devsandbox/egress"
	"github.com/devsandbox/devsandbox/proxy/audit"
	"github.com/devsandbox/devsandbox/proxy/service"
)

// entries parses egress entries.
func entries(t *testing.T, ss ...string) []egress.Entry {
	t.Helper()
	es, err := egress.ParseEntries(ss)
	if err != nil {
		t.Fatal(err)
	}
	return es
}

// inherited binds a Unix socket as devsandbox does and returns its path and the
// listening descriptor to hand over; the test's own listener is closed.
func inherited(t *testing.T) (string, *os.File) {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "s")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	ln.SetUnlinkOnClose(false)
	f, err := ln.File()
	if err != nil {
		t.Fatal(err)
	}
	ln.Close()
	return sock, f
}

// noEnv is an empty environment.
func noEnv(string) (string, bool) { return "", false }

// envOf is an environment holding vars.
func envOf(vars map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
}

// proxied sends one plain HTTP proxy request on c and returns the status.
func proxied(t *testing.T, c net.Conn, br *bufio.Reader, url string) int {
	t.Helper()
	fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: x\r\n\r\n", url)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// exitsCleanly waits for run's code on done and fails unless it is 0 within 5 s of
// the context's end (after names that end in the failure).
func exitsCleanly(t *testing.T, done <-chan int, stderr *bytes.Buffer, after string) {
	t.Helper()
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("exit %d; stderr:\n%s", code, stderr)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("still running 5 s after %s", after)
	}
}

// TestServesUntilDone follows a session: a client connects before the proxy runs (the
// bound socket queues it), is served by policy, and when the control pipe ends (the
// context) the proxy returns 0 with every request in the audit log, leaving the
// socket file.
func TestServesUntilDone(t *testing.T) {
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "hi") }))
	defer origin.Close()
	sock, lnFile := inherited(t)
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))

	logDir := filepath.Join(t.TempDir(), "log")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stderr bytes.Buffer
	done := make(chan int, 1)
	s := service.Settings{Session: "s1", LogDir: logDir, Default: "deny", Allow: entries(t, "127.0.0.1")}
	go func() { done <- run(ctx, s, noEnv, []*os.File{lnFile}, &stderr, false) }()

	br := bufio.NewReader(c)
	if code := proxied(t, c, br, origin.URL+"/ok"); code != 200 {
		t.Errorf("allowed request: %d", code)
	}
	if code := proxied(t, c, br, "http://127.0.0.2:1/no"); code != 403 {
		t.Errorf("denied request: %d", code)
	}
	c.Close()
	cancel()
	exitsCleanly(t, done, &stderr, "the control pipe ended")
	recs, err := audit.ReadLog(logDir, audit.LogFilter{Session: "s1"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range recs {
		got = append(got, fmt.Sprintf("%s %s %s %d %s", r.Decision, r.Host, r.Path, r.Status, r.Rule))
	}
	want := []string{"allow 127.0.0.1 /ok 200 127.0.0.1", "deny 127.0.0.2 /no 403 " + audit.RulePrivate}
	if !slices.Equal(got, want) {
		t.Errorf("audit log:\n%q\nwant\n%q", got, want)
	}
	if _, err := os.Stat(sock); err != nil {
		t.Errorf("the socket file is the binder's to remove: %v", err)
	}
	if c, err := net.Dial("unix", sock); err == nil {
		c.Close()
		t.Error("still accepting after exit")
	}
}

// TestStopsOnSignal: a cancelled context (SIGTERM, SIGINT, the control pipe's end)
// shuts the proxy down at once, with nothing in flight.
func TestStopsOnSignal(t *testing.T) {
	_, lnFile := inherited(t)
	ctx, cancel := context.WithCancel(context.Background())
	var stderr bytes.Buffer
	done := make(chan int, 1)
	go func() { done <- run(ctx, service.Settings{Session: "s2"}, noEnv, []*os.File{lnFile}, &stderr, false) }()
	cancel()
	exitsCleanly(t, done, &stderr, "the signal")
}

func TestStartFailures(t *testing.T) {
	notSocket, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer notSocket.Close()
	tests := []struct {
		name string
		s    service.Settings
		want string
	}{
		{"bad default", service.Settings{Default: "maybe"}, "devsandbox-proxy: egress policy: "},
		{"no socket", service.Settings{}, "devsandbox-proxy: fd 5 is not a listening socket"},
		{"mitm without CA", service.Settings{MITM: true}, "devsandbox-proxy: mitm: $DEVSANDBOX_PROXY_CA is not set"},
		{"credential without placeholder", service.Settings{Credentials: []service.Credential{{Name: "K", Host: "a.test", Header: "X", ValueVar: "V", PlaceholderVar: "P"}}},
			"devsandbox-proxy: credential K: $P is not set"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stderr bytes.Buffer
			if code := run(context.Background(), tt.s, noEnv, []*os.File{notSocket}, &stderr, false); code != 2 || !strings.Contains(stderr.String(), tt.want) {
				t.Errorf("exit %d, stderr %q; want 2 and %q", code, stderr.String(), tt.want)
			}
		})
	}
}

// TestCredentialFromEnvironment: a credential's value comes from the variable its
// settings name and reaches the origin; the settings hold only the name.
func TestCredentialFromEnvironment(t *testing.T) {
	got := make(chan string, 1)
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got <- r.Header.Get("X-Key") }))
	defer origin.Close()
	sock, lnFile := inherited(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	host := strings.TrimPrefix(origin.URL, "http://")
	cred := service.Credential{Name: "SVC_KEY", Host: "http://" + host, Header: "X-Key", Format: "k={}", ValueVar: "DEVSANDBOX_CREDENTIAL_0"}
	s := service.Settings{Default: "deny", Allow: entries(t, "127.0.0.1"), Credentials: []service.Credential{cred}}
	env := envOf(map[string]string{"DEVSANDBOX_CREDENTIAL_0": "s3cret"})
	var stderr bytes.Buffer
	done := make(chan int, 1)
	go func() { done <- run(ctx, s, env, []*os.File{lnFile}, &stderr, false) }()
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if code := proxied(t, c, bufio.NewReader(c), origin.URL+"/"); code != 200 {
		t.Errorf("status %d", code)
	}
	if v := <-got; v != "k=s3cret" {
		t.Errorf("the origin saw %q", v)
	}
	c.Close()
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("exit %d: %s", code, &stderr)
	}
	if b, _ := json.Marshal(s); strings.Contains(string(b), "s3cret") {
		t.Error("the value is in the settings")
	}
}

// TestRefusesHostLoopback: on the host, an allow entry for the loopback opens nothing:
// the request is refused as the host's own, and the origin never asked.
func TestRefusesHostLoopback(t *testing.T) {
	hits := make(chan struct{}, 1)
	origin := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits <- struct{}{} }))
	defer origin.Close()
	sock, lnFile := inherited(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	var stderr bytes.Buffer
	s := service.Settings{Default: "allow", Allow: entries(t, "127.0.0.1", "localhost"), LogDir: t.TempDir()}
	go func() { done <- run(ctx, s, noEnv, []*os.File{lnFile}, &stderr, true) }()
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(c)
	port := origin.URL[strings.LastIndexByte(origin.URL, ':'):]
	for _, u := range []string{origin.URL + "/", "http://localhost" + port + "/", "http://[::ffff:127.0.0.1]" + port + "/"} {
		if code := proxied(t, c, br, u); code != 403 {
			t.Errorf("%s: status %d, want 403", u, code)
		}
	}
	c.Close()
	cancel()
	<-done
	select {
	case <-hits:
		t.Error("the loopback origin was reached")
	default:
	}
}

// TestGitPushSettings: GitPush sets the push policy: a push to a ref outside it is
// answered by the proxy and never reaches the server; GitSSH is what lets port 22
// through.
func TestGitPushSettings(t *testing.T) {
	var hits atomic.Int64
	origin := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits.Add(1) }))
	defer origin.Close()
	agent, err := egress.ParseRefPattern("agent/*")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		ssh        bool
		sshRefused bool
	}{
		{false, true},
		{true, false}, // then dialled: 502, or 200 where sshd listens
	} {
		sock, lnFile := inherited(t)
		ctx, cancel := context.WithCancel(context.Background())
		s := service.Settings{Session: "s1", Default: "deny", Allow: entries(t, "127.0.0.1"), GitPush: []egress.RefPattern{agent}, GitSSH: tt.ssh}
		done := make(chan int, 1)
		go func() { done <- run(ctx, s, noEnv, []*os.File{lnFile}, io.Discard, false) }()
		c, err := net.Dial("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		br := bufio.NewReader(c)
		cmd := strings.Repeat("0", 40) + " " + strings.Repeat("1", 40) + " refs/heads/main\x00report-status"
		body := fmt.Sprintf("%04x%s0000", len(cmd)+4, cmd)
		fmt.Fprintf(c, "POST %s/r.git/git-receive-pack HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s", origin.URL, len(body), body)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		reply, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 || !strings.Contains(string(reply), "ng refs/heads/main refused by devsandbox proxy.git_push") {
			t.Errorf("ssh %v: push to main: %d %q", tt.ssh, resp.StatusCode, reply)
		}
		fmt.Fprintf(c, "CONNECT 127.0.0.1:22 HTTP/1.1\r\nHost: 127.0.0.1:22\r\n\r\n")
		if resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect}); err != nil || (resp.StatusCode == 403) != tt.sshRefused {
			t.Errorf("ssh %v: CONNECT :22: %v %v", tt.ssh, resp, err)
		}
		c.Close()
		cancel()
		<-done
	}
	if hits.Load() != 0 {
		t.Errorf("the server received %d requests", hits.Load())
	}
}

// TestServesHandedListenersOnly: with NoSocket the first descriptor is the listener
// channel; a connection queued on a listener handed before the proxy runs is served by
// policy, and the proxy exits cleanly when the context ends.
func TestServesHandedListenersOnly(t *testing.T) {
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "hi") }))
	defer origin.Close()
	host, proxyEnd, err := service.NewListenerChannel()
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	lf, err := ln.(*net.TCPListener).File()
	if err != nil {
		t.Fatal(err)
	}
	if err := service.SendListener(host, lf); err != nil {
		t.Fatal(err)
	}
	lf.Close()
	c, err := net.Dial("tcp", ln.Addr().String()) // queued before the proxy runs
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ln.Close() // the handed copy is the only one now
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stderr bytes.Buffer
	done := make(chan int, 1)
	s := service.Settings{Session: "s3", Default: "deny", Allow: entries(t, "127.0.0.1"), Listeners: true, NoSocket: true}
	go func() { done <- run(ctx, s, noEnv, []*os.File{proxyEnd}, &stderr, false) }()
	br := bufio.NewReader(c)
	if code := proxied(t, c, br, origin.URL+"/ok"); code != 200 {
		t.Errorf("allowed request: %d", code)
	}
	if code := proxied(t, c, br, "http://127.0.0.2:9/no"); code != 403 {
		t.Errorf("denied request: %d", code)
	}
	cancel()
	exitsCleanly(t, done, &stderr, "the context ended")
}
