package main

import (
	"bufio"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/devsandbox/devsandbox/config"
	"github.com/devsandbox/devsandbox/egress"
	"github.com/devsandbox/devsandbox/isolator"
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
	var tools []egress.Entry
	for _, s := range []string{"api.tool.test", "example.com", "api.tool.test"} {
		e, _ := egress.ParseEntry(s)
		tools = append(tools, e)
	}
	p := &isolator.Plan{StateDir: "/st/proj-1", Egress: egress.Rules{Mode: egress.Proxy, ProxyAllow: tools}}
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
	t.Setenv(fakeProxyEnv, "serve")
	dir := shortTemp(t)
	sock, marker := filepath.Join(dir, "run", "p.sock"), filepath.Join(dir, "stopped")
	stop, err := spawnProxy(os.Args[0], []string{marker}, sock, 5*time.Second)
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

// TestSpawnProxyKillsAfterBound: a proxy that does not exit is killed once the bound
// has passed.
func TestSpawnProxyKillsAfterBound(t *testing.T) {
	t.Setenv(fakeProxyEnv, "stubborn")
	sock := filepath.Join(shortTemp(t), "p.sock")
	stop, err := spawnProxy(os.Args[0], nil, sock, 200*time.Millisecond)
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
	stop, err := spawnProxy(filepath.Join(shortTemp(t), proxyBinary), nil, sock, time.Second)
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
