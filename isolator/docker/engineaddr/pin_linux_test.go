package engineaddr

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// A pinned address dials, and is judged by, the socket Pin opened: after the path
// names a regular file, connections still reach the first listener, and HostNetwork's
// answer is that listener's (here the test binary: a relay).
func TestPinFollowsTheSocketNotThePath(t *testing.T) {
	a := listen(t)
	sock, _ := unixSocket(a.Host)
	l2dir := t.TempDir()
	link := filepath.Join(l2dir, "docker.sock")
	if err := os.Symlink(sock, link); err != nil {
		t.Fatal(err)
	}
	p, err := Address{Host: "unix://" + link, Origin: "docker.host"}.Pin()
	if err != nil {
		t.Fatal(err)
	}
	if !p.Pinned() || !strings.HasPrefix(p.DialPath(), "/proc/self/fd/") {
		t.Fatalf("Pin: pinned %v, dial path %q; want the socket's /proc/self/fd path", p.Pinned(), p.DialPath())
	}
	if err := os.Remove(link); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(link, []byte("not a socket"), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("unix", p.DialPath())
	if err != nil {
		t.Fatalf("dialling the pinned socket after its path changed: %v", err)
	}
	c.Close()
	if n := p.HostNetwork(); n.Here || !strings.Contains(n.Why, "a relay") || !strings.Contains(n.Why, link) {
		t.Errorf("HostNetwork of the pinned socket = %+v, want its listener's (the test binary, a relay), named by %s", n, link)
	}
	again, err := p.Pin()
	if err != nil || again.DialPath() != p.DialPath() {
		t.Errorf("pinning a pinned address: %q, %v; want it as it was (%q)", again.DialPath(), err, p.DialPath())
	}
}

// Pin refuses a path that is not a socket and one that is not there; another kind of
// address is returned unpinned.
func TestPinRefuses(t *testing.T) {
	file := filepath.Join(t.TempDir(), "docker.sock")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := (Address{Host: "unix://" + file}).Pin(); !errors.Is(err, ErrNotSocket) {
		t.Errorf("Pin of a regular file: %v, want ErrNotSocket", err)
	}
	gone := filepath.Join(t.TempDir(), "gone.sock")
	if _, err := (Address{Host: "unix://" + gone}).Pin(); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Pin of a missing socket: %v, want ErrNotExist", err)
	}
	tcp, err := Address{Host: "tcp://127.0.0.1:2376"}.Pin()
	if err != nil || tcp.Pinned() || tcp.DialPath() != "" {
		t.Errorf("Pin of a tcp:// address: pinned %v, dial path %q, %v; want it unpinned", tcp.Pinned(), tcp.DialPath(), err)
	}
}

// A pinned socket whose listener is a relay (here the test binary) does not bind this
// machine's files; the same socket unpinned counts as local, by its form alone.
func TestLocalAsksThePinnedListener(t *testing.T) {
	a := listen(t)
	if !a.Local() {
		t.Fatalf("an unpinned Unix socket %s: not local", a.Host)
	}
	p, err := a.Pin()
	if err != nil {
		t.Fatal(err)
	}
	if p.Local() {
		t.Errorf("a pinned Unix socket served by a relay (the test binary): taken for an engine that binds this machine's files")
	}
}

// dockerd (any network namespace, any user) and a systemd (root's docker.socket, a
// user's rootless socket unit) bind this machine's files; so does podman's service,
// root's or this user's, in this process's root directory; a relay does not.
func TestBindListener(t *testing.T) {
	const me, other = 1000, 1001
	ours := func(uid uint32) bool { return uid == me }
	cases := []struct {
		name     string
		uid      uint32
		sameRoot bool
		want     bool
	}{
		{"dockerd", other, false, true},
		{"systemd", me, false, true},
		{"ssh", me, true, false},
		{"socat", 0, true, false},
		{"com.docker.back", me, true, false},
		{"", 0, true, false},
		{"podman", me, true, true},
		{"podman", 0, true, true},
		{"podman", me, false, false},
		{"podman", 0, false, false},
		{"podman", other, true, false},
		{"conmon", me, true, false},
	}
	for _, tc := range cases {
		if got := bindListener(tc.name, tc.uid, ours, func() bool { return tc.sameRoot }); got != tc.want {
			t.Errorf("bindListener(%q, uid %d, same root %v) = %v, want %v", tc.name, tc.uid, tc.sameRoot, got, tc.want)
		}
	}
}

// Unpin closes the pinned socket for every copy: the descriptor is gone, later
// connections fail rather than go to whatever file takes its number, and what the
// listener check found before stays.
func TestUnpin(t *testing.T) {
	a := listen(t)
	p, err := a.Pin()
	if err != nil {
		t.Fatal(err)
	}
	local := p.Local()
	path := p.DialPath()
	cp := p
	p.Unpin()
	p.Unpin()
	if _, err := os.Stat(path); err == nil {
		t.Errorf("after Unpin, %s still names an open descriptor", path)
	}
	if got := cp.DialPath(); got != "" {
		t.Errorf("a copy's DialPath after Unpin = %q, want \"\"", got)
	}
	if _, err := cp.DialUnix(context.Background(), &net.Dialer{}); !errors.Is(err, ErrUnpinned) {
		t.Errorf("a copy's DialUnix after Unpin: %v, want ErrUnpinned", err)
	}
	if cp.Local() != local {
		t.Errorf("Local changed after Unpin")
	}
	a.Unpin() // an unpinned address: nothing to do
	if q := (Address{Host: "unix:///nonexistent/docker.sock"}).TryPin(); q.Pinned() {
		t.Errorf("TryPin of a missing socket pinned it")
	}
	if q := a.TryPin(); !q.Pinned() {
		t.Errorf("TryPin of a listening socket did not pin it")
	} else {
		q.Unpin()
	}
}

// LocalWhy, doctor's reason for Local, names the listener of a pinned socket and
// what follows from it; an unpinned socket and a tcp:// engine are judged by form.
func TestLocalWhy(t *testing.T) {
	other := t.TempDir()
	cases := []struct {
		name string
		proc string
		want []string
	}{
		{"dockerd", fakeProc(t, "dockerd", "/proc/self/net"), []string{`is "dockerd" (pid ` + strconv.Itoa(os.Getpid()), "the engine's own process on this machine"}},
		{"a rootless dockerd in another network namespace", fakeProc(t, "dockerd", other), []string{`is "dockerd"`, "the engine's own process"}},
		{"a relay", fakeProc(t, "ssh", "/proc/self/net"), []string{`is "ssh" (pid `, "a relay (ssh -L, socat, Docker Desktop's backend)"}},
		{"podman's service, this user's, in this root directory", podmanProc(t, "/"), []string{`is "podman" (pid `, "podman's Docker-compatible service on this machine", "binds this machine's files"}},
		{"podman's service in another root directory", podmanProc(t, t.TempDir()), []string{`is "podman" (pid `, "not taken for one that binds this machine's files"}},
		{"a name its /proc does not show", t.TempDir(), []string{"reading the name of the process listening on", "cannot be told counts as not local"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := listen(t).Pin()
			if err != nil {
				t.Fatal(err)
			}
			got := p.localWhy(tc.proc)
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("localWhy = %q, want it to say %q", got, w)
				}
			}
		})
	}
	if got := listen(t).LocalWhy(); !strings.Contains(got, "not pinned") {
		t.Errorf("LocalWhy of an unpinned socket = %q, want it judged by form", got)
	}
	if got := (Address{Host: "tcp://127.0.0.1:2376"}).LocalWhy(); !strings.HasPrefix(got, "not a Unix socket") {
		t.Errorf("LocalWhy of a tcp:// engine = %q", got)
	}
}

// A listener of this user is taken only from this process's root directory: one in
// another (a sandbox's new root, here a /proc whose entry for the listener's pid,
// the test itself, names another directory) is refused as planted; a socket nobody
// listens on is left to fail as an engine that does not answer.
func TestListenerNotPlanted(t *testing.T) {
	a := listen(t)
	sock, _ := unixSocket(a.Host)
	if err := listenerNotPlanted(sock, sock, "/proc"); err != nil {
		t.Errorf("the test's own listener, in this root directory: %v", err)
	}
	proc := t.TempDir()
	for _, dir := range []string{"self", strconv.Itoa(os.Getpid())} {
		if err := os.Mkdir(filepath.Join(proc, dir), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("/", filepath.Join(proc, "self", "root")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(t.TempDir(), filepath.Join(proc, strconv.Itoa(os.Getpid()), "root")); err != nil {
		t.Fatal(err)
	}
	err := listenerNotPlanted(sock, sock, proc)
	if !errors.Is(err, ErrPlanted) || !strings.Contains(err.Error(), "runs in another root directory") || !strings.Contains(err.Error(), "rm "+sock) {
		t.Errorf("a listener in another root directory: %v; want ErrPlanted naming the fix", err)
	}
	if err := os.Remove(filepath.Join(proc, strconv.Itoa(os.Getpid()), "root")); err != nil {
		t.Fatal(err)
	}
	if err := listenerNotPlanted(sock, sock, proc); !errors.Is(err, ErrPlanted) || !strings.Contains(err.Error(), "cannot be read") {
		t.Errorf("a listener whose root directory cannot be read: %v; want ErrPlanted", err)
	}

	dead := filepath.Join(t.TempDir(), "dead.sock")
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: dead, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	l.SetUnlinkOnClose(false)
	l.Close()
	if err := listenerNotPlanted(dead, dead, "/proc"); err != nil {
		t.Errorf("a socket nobody listens on: %v; want nil (the client then fails as an engine that does not answer)", err)
	}
}

// podmanProc is a fakeProc where this process is called podman and its root
// directory is root.
func podmanProc(t *testing.T, root string) string {
	proc := fakeProc(t, "podman", "/proc/self/net")
	if err := os.Symlink(root, filepath.Join(proc, strconv.Itoa(os.Getpid()), "root")); err != nil {
		t.Fatal(err)
	}
	return proc
}
