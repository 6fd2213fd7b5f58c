package bwrap

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/isolator/sandboxinit/wire"
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

// TestScopeEnv: systemd-run runs on the host and finds the user's systemd manager
// through XDG_RUNTIME_DIR and DBUS_SESSION_BUS_ADDRESS (SYSTEMD_* tune it). A
// project's env.set (or -e) may give the command other values: the host's
// systemd-run must get devsandbox's own (a bus a sandbox planted could "place" the
// scope and apply no limit), while the command still gets its own, restored by the
// init, and no host value it was not given.
func TestScopeEnv(t *testing.T) {
	spec := &Spec{Env: []isolator.EnvVar{
		{Name: "XDG_RUNTIME_DIR", Value: "/home/u/proj/run"},
		{Name: "DBUS_SESSION_BUS_ADDRESS", Value: "unix:path=/home/u/proj/run/bus"},
		{Name: "SYSTEMD_LOG_LEVEL", Value: "debug"},
		{Name: "LD_PRELOAD", Value: "/home/u/proj/x.so"},
		{Name: "KEEP", Value: "1"},
	}}
	host := map[string]string{"XDG_RUNTIME_DIR": "/run/user/1000", "DBUS_SESSION_BUS_ADDRESS": "unix:path=/run/user/1000/bus", "HOME": "/home/u"}
	env, err := childEnv(spec, host)
	if err != nil {
		t.Fatal(err)
	}
	got := scopeEnv(env, host)
	vars := map[string]string{}
	for _, kv := range got {
		k, v, _ := strings.Cut(kv, "=")
		if _, dup := vars[k]; dup {
			t.Errorf("systemd-run's environment names %s twice: %q", k, got)
		}
		vars[k] = v
	}
	for _, name := range []string{"XDG_RUNTIME_DIR", "DBUS_SESSION_BUS_ADDRESS"} {
		if vars[name] != host[name] {
			t.Errorf("systemd-run is given %s=%q, want devsandbox's own %q (the command's value steers the host's systemd-run)", name, vars[name], host[name])
		}
	}
	for _, name := range []string{"SYSTEMD_LOG_LEVEL", "LD_PRELOAD"} {
		if _, ok := vars[name]; ok {
			t.Errorf("systemd-run is given the command's %s=%q", name, vars[name])
		}
	}
	// The init (wire.RestoreLoaderEnv) gives the command exactly its own.
	cmd := map[string]string{}
	for _, kv := range got {
		k, v, _ := strings.Cut(kv, "=")
		cmd[k] = v
	}
	err = wire.RestoreLoaderEnv(got, func(k, v string) error { cmd[k] = v; return nil }, func(k string) error { delete(cmd, k); return nil })
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for _, e := range spec.Env {
		want[e.Name] = e.Value
	}
	if !reflect.DeepEqual(cmd, want) {
		t.Errorf("the command's environment after the init = %v, want %v", cmd, want)
	}
	// A command given none of them gets none of devsandbox's.
	bare, err := childEnv(&Spec{Env: []isolator.EnvVar{{Name: "KEEP", Value: "1"}}}, host)
	if err != nil {
		t.Fatal(err)
	}
	got = scopeEnv(bare, host)
	cmd = map[string]string{}
	for _, kv := range got {
		k, v, _ := strings.Cut(kv, "=")
		cmd[k] = v
	}
	_ = wire.RestoreLoaderEnv(got, func(k, v string) error { cmd[k] = v; return nil }, func(k string) error { delete(cmd, k); return nil })
	if !reflect.DeepEqual(cmd, map[string]string{"KEEP": "1"}) {
		t.Errorf("a command given no runtime dir or bus gets %v after the init, want only KEEP=1", cmd)
	}
}
