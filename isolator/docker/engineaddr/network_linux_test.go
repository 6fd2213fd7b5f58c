package engineaddr

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// listen serves a Unix socket from this process (the test binary, not dockerd) and
// returns its address.
func listen(t *testing.T) Address {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "docker.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return Address{Host: "unix://" + sock}
}

// fakeProc is a /proc where this process is called name and its /proc/PID/net is
// net; self is the real one.
func fakeProc(t *testing.T, name, net string) string {
	t.Helper()
	proc := t.TempDir()
	dir := filepath.Join(proc, strconv.Itoa(os.Getpid()))
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "comm"), []byte(name+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(net, filepath.Join(dir, "net")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/proc/self", filepath.Join(proc, "self")); err != nil {
		t.Fatal(err)
	}
	return proc
}

// Only dockerd in this process's network namespace is taken for an engine on this
// machine's network; a relay (here the test binary), a dockerd in another namespace,
// an address nobody listens on and a tcp:// engine are elsewhere.
func TestHostNetwork(t *testing.T) {
	other := t.TempDir()
	if err := os.WriteFile(filepath.Join(other, "dev"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	a := listen(t)
	cases := []struct {
		name string
		addr Address
		proc string
		here bool
		why  string
	}{
		{"dockerd in this namespace", a, fakeProc(t, "dockerd", "/proc/self/net"), true, ""},
		{"root's systemd in this namespace (socket activation)", a, fakeProc(t, "systemd", "/proc/self/net"), os.Getuid() == 0, ""},
		{"systemd in another namespace", a, fakeProc(t, "systemd", other), false, "runs in another network namespace"},
		{"a relay", a, "/proc", false, `is "` + readComm(t) + `" (pid ` + strconv.Itoa(os.Getpid())},
		{"dockerd in another namespace", a, fakeProc(t, "dockerd", other), false, "runs in another network namespace"},
		{"a name its /proc does not show", a, t.TempDir(), false, "reading the name of the process listening on"},
		{"nobody listens", Address{Host: "unix://" + filepath.Join(t.TempDir(), "gone.sock")}, "/proc", false, "connecting to"},
		{"tcp", Address{Host: "tcp://127.0.0.1:2375"}, "/proc", false, "not a Unix socket"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := hostNetwork(tc.addr, tc.proc)
			if got.Here != tc.here || !strings.Contains(got.Why, tc.why) || tc.here && got.Why != "" {
				t.Errorf("hostNetwork = %+v, want Here %v and a reason with %q", got, tc.here, tc.why)
			}
		})
	}
}

func readComm(t *testing.T) string {
	b, err := os.ReadFile("/proc/self/comm")
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// Only dockerd, or root's systemd (docker.socket's listener), is taken for the engine;
// a user's systemd (a rootless engine's socket unit) and any relay are not.
func TestEngineListener(t *testing.T) {
	for _, tc := range []struct {
		name string
		uid  uint32
		want bool
	}{
		{"dockerd", 0, true},
		{"dockerd", 1000, true},
		{"systemd", 0, true},
		{"systemd", 1000, false},
		{"ssh", 1000, false},
		{"socat", 0, false},
		{"com.docker.back", 1000, false},
		{"", 0, false},
	} {
		if got := engineListener(tc.name, tc.uid); got != tc.want {
			t.Errorf("engineListener(%q, %d) = %v, want %v", tc.name, tc.uid, got, tc.want)
		}
	}
}
