package bwrap

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// fakeScope is a cgroup tree in a temporary directory: a systemd user manager with
// the given controllers delegated, on the given file system type.
func fakeScope(t *testing.T, fsType int64, controllers string) scopeHost {
	t.Helper()
	root, rt := t.TempDir(), t.TempDir()
	mgr := filepath.Join(root, "user.slice", "user-1000.slice", "user@1000.service")
	if err := os.MkdirAll(mgr, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(mgr, "cgroup.controllers"), []byte(controllers+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(rt, "systemd"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(rt, "systemd", "private"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	return scopeHost{root: root, runtimeDir: rt, uid: 1000,
		lookPath:   func(string) (string, error) { return "/usr/bin/systemd-run", nil },
		statfsType: func(string) (int64, error) { return fsType, nil }}
}

func TestScopeCheck(t *testing.T) {
	both := []string{"memory", "cpu"}
	for _, tc := range []struct {
		name   string
		fs     scopeHost
		want   []string
		reason string // "" when the scope can be made
	}{
		{"delegated", fakeScope(t, unix.CGROUP2_SUPER_MAGIC, "cpuset cpu io memory pids"), both, ""},
		{"pids for TasksMax", fakeScope(t, unix.CGROUP2_SUPER_MAGIC, "cpuset cpu io memory pids"), []string{"pids"}, ""},
		{"no limits asked", fakeScope(t, 0x27e0eb, ""), nil, ""},
		{"cgroup v1", fakeScope(t, 0x27e0eb, "memory cpu"), both, "is not cgroup v2"},
		{"cpu not delegated", fakeScope(t, unix.CGROUP2_SUPER_MAGIC, "memory pids"), both, "the cpu controller is not delegated"},
		{"memory only needs no cpu", fakeScope(t, unix.CGROUP2_SUPER_MAGIC, "memory pids"), []string{"memory"}, ""},
		{"no user manager", func() scopeHost {
			c := fakeScope(t, unix.CGROUP2_SUPER_MAGIC, "memory cpu")
			c.runtimeDir = t.TempDir()
			return c
		}(), both, "no systemd user manager is running"},
		{"no runtime dir", func() scopeHost {
			c := fakeScope(t, unix.CGROUP2_SUPER_MAGIC, "memory cpu")
			c.runtimeDir = ""
			return c
		}(), both, "XDG_RUNTIME_DIR is not set"},
		{"no systemd-run", func() scopeHost {
			c := fakeScope(t, unix.CGROUP2_SUPER_MAGIC, "memory cpu")
			c.lookPath = func(string) (string, error) { return "", errors.New("not found") }
			return c
		}(), both, "systemd-run is not on PATH"},
	} {
		err := tc.fs.check(tc.want...)
		switch {
		case tc.reason == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.reason != "" && (err == nil || !errors.Is(err, errNoScope) || !strings.Contains(err.Error(), tc.reason)):
			t.Errorf("%s: %v, want errNoScope saying %q", tc.name, err, tc.reason)
		}
	}
}
