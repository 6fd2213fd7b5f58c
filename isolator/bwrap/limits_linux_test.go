package bwrap

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/devsandbox/devsandbox/isolator"
)

func TestKernelAtLeast(t *testing.T) {
	for release, want := range map[string]bool{
		"5.14.0": true, "5.13.19-generic": false, "6.1.0-13-amd64": true, "4.18.0-513.el8.x86_64": false,
		"5.15.0-91-generic": true, "6.18.44-fc-v1045": true, "5": false, "x.y": false, "5.14-rc1": true,
	} {
		if got := kernelAtLeast(release, minPidsKernel); got != want {
			t.Errorf("kernelAtLeast(%q) = %v, want %v", release, got, want)
		}
	}
}

func TestVersionAtLeast(t *testing.T) {
	for v, want := range map[string]bool{
		"bubblewrap 0.8.0": true, "bubblewrap 0.6.1": false, "bubblewrap 0.11.0": true, "bubblewrap 0.7.9": false,
		"bubblewrap 1.0": true, "odd": true, "": true,
	} {
		if got := versionAtLeast(v, minBwrap); got != want {
			t.Errorf("versionAtLeast(%q) = %v, want %v", v, got, want)
		}
	}
}

// fakeCgroups is a cgroup tree in a temporary directory: a systemd user manager with
// the given controllers delegated, on the given file system type.
func fakeCgroups(t *testing.T, fsType int64, controllers string) cgroupFS {
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
	return cgroupFS{root: root, runtimeDir: rt, uid: 1000,
		lookPath:   func(string) (string, error) { return "/usr/bin/systemd-run", nil },
		statfsType: func(string) (int64, error) { return fsType, nil }}
}

func TestCgroupsCheck(t *testing.T) {
	both := &isolator.Plan{Limits: isolator.Limits{Memory: 1 << 30, CPUs: 2}}
	memOnly := &isolator.Plan{Limits: isolator.Limits{Memory: 1 << 30}}
	for _, tc := range []struct {
		name   string
		fs     cgroupFS
		plan   *isolator.Plan
		reason string // "" when the scope can be made
	}{
		{"delegated", fakeCgroups(t, unix.CGROUP2_SUPER_MAGIC, "cpuset cpu io memory pids"), both, ""},
		{"no limits asked", fakeCgroups(t, 0x27e0eb, ""), &isolator.Plan{}, ""},
		{"cgroup v1", fakeCgroups(t, 0x27e0eb, "memory cpu"), both, "is not cgroup v2"},
		{"cpu not delegated", fakeCgroups(t, unix.CGROUP2_SUPER_MAGIC, "memory pids"), both, "the cpu controller is not delegated"},
		{"memory only needs no cpu", fakeCgroups(t, unix.CGROUP2_SUPER_MAGIC, "memory pids"), memOnly, ""},
		{"no user manager", func() cgroupFS {
			c := fakeCgroups(t, unix.CGROUP2_SUPER_MAGIC, "memory cpu")
			c.runtimeDir = t.TempDir()
			return c
		}(), both, "no systemd user manager is running"},
		{"no runtime dir", func() cgroupFS {
			c := fakeCgroups(t, unix.CGROUP2_SUPER_MAGIC, "memory cpu")
			c.runtimeDir = ""
			return c
		}(), both, "XDG_RUNTIME_DIR is not set"},
		{"no systemd-run", func() cgroupFS {
			c := fakeCgroups(t, unix.CGROUP2_SUPER_MAGIC, "memory cpu")
			c.lookPath = func(string) (string, error) { return "", errors.New("not found") }
			return c
		}(), both, "systemd-run is not on PATH"},
	} {
		err := tc.fs.check(tc.plan)
		switch {
		case tc.reason == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.reason != "" && (err == nil || !errors.Is(err, errNoScope) || !strings.Contains(err.Error(), tc.reason)):
			t.Errorf("%s: %v, want errNoScope saying %q", tc.name, err, tc.reason)
		}
	}
}

func TestLimitsErrorNamesKeysAndFix(t *testing.T) {
	err := limitsError(&isolator.Plan{Limits: isolator.Limits{CPUs: 1}}, errNoScope)
	if !errors.Is(err, isolator.ErrProtection) {
		t.Fatalf("%v is not ErrProtection", err)
	}
	for _, want := range []string{"limits.cpus (--cpus)", "the command did not run", "--isolator=docker", "devsandbox doctor"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not say %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "limits.memory") {
		t.Errorf("%q names a limit that was not asked for", err)
	}
}

func TestCheckPidsRoot(t *testing.T) {
	err := checkPids(&isolator.Plan{User: isolator.User{UID: 0}, Limits: isolator.Limits{Pids: 4096}})
	if !errors.Is(err, isolator.ErrProtection) || !strings.Contains(err.Error(), "limits.pids = 0") {
		t.Errorf("root: %v", err)
	}
	if err := checkPids(&isolator.Plan{User: isolator.User{UID: 0}}); err != nil {
		t.Errorf("no limit asked: %v", err)
	}
}
