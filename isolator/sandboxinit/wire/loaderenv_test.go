package wire

import (
	"maps"
	"slices"
	"strings"
	"testing"
)

func TestHostSafeEnv(t *testing.T) {
	env := []string{"PATH=/usr/bin", "LD_PRELOAD=/p/x.so", "LD_LIBRARY_PATH=/p/lib", "LD_AUDIT=a", "LD_DEBUG_OUTPUT=/h/ld",
		"GCONV_PATH=/p/g", "GLIBC_TUNABLES=x", "LOCPATH=/p/l", "OLD_X=1", "XLD_PRELOAD=1", "HOME=/h"}
	orig := slices.Clone(env)
	got := HostSafeEnv(env)
	want := []string{"PATH=/usr/bin", "DEVSANDBOX_LOADER_LD_PRELOAD=/p/x.so", "DEVSANDBOX_LOADER_LD_LIBRARY_PATH=/p/lib",
		"DEVSANDBOX_LOADER_LD_AUDIT=a", "DEVSANDBOX_LOADER_LD_DEBUG_OUTPUT=/h/ld", "DEVSANDBOX_LOADER_GCONV_PATH=/p/g",
		"DEVSANDBOX_LOADER_GLIBC_TUNABLES=x", "DEVSANDBOX_LOADER_LOCPATH=/p/l", "OLD_X=1", "XLD_PRELOAD=1", "HOME=/h"}
	if !slices.Equal(got, want) {
		t.Errorf("HostSafeEnv:\n got %q\nwant %q", got, want)
	}
	if !slices.Equal(env, orig) {
		t.Errorf("HostSafeEnv changed its argument: %q", env)
	}
	plain := []string{"A=1", "B=2"}
	if got := HostSafeEnv(plain); !slices.Equal(got, plain) {
		t.Errorf("HostSafeEnv(%q) = %q", plain, got)
	}

	vars := map[string]string{}
	for _, kv := range append(got, "DEVSANDBOX_LOADER_FOO=kept") {
		n, v, _ := strings.Cut(kv, "=")
		vars[n] = v
	}
	environ := append(got, "DEVSANDBOX_LOADER_FOO=kept")
	err := RestoreLoaderEnv(environ,
		func(n, v string) error { vars[n] = v; return nil },
		func(n string) error { delete(vars, n); return nil })
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range orig {
		n, v, _ := strings.Cut(kv, "=")
		if vars[n] != v {
			t.Errorf("restored %s=%q, want %q", n, vars[n], v)
		}
	}
	for n := range vars {
		if n != "DEVSANDBOX_LOADER_FOO" && strings.HasPrefix(n, LoaderEnvPrefix) {
			t.Errorf("%s left after the restore", n)
		}
	}
	if vars["DEVSANDBOX_LOADER_FOO"] != "kept" || vars["FOO"] != "" {
		t.Errorf("a variable of the prefix that names no loader variable was renamed: %v", vars)
	}
}

// ScopeEnv gives systemd-run the host's runtime dir and bus, never the command's;
// RestoreLoaderEnv gives the command exactly its own back, a variable that already
// carries the prefix included, and none of the host's it was not given.
func TestScopeEnvRoundTrip(t *testing.T) {
	host := map[string]string{"XDG_RUNTIME_DIR": "/run/user/1", "DBUS_SESSION_BUS_ADDRESS": "unix:path=/run/user/1/bus"}
	for _, env := range [][]string{
		{"A=1", "XDG_RUNTIME_DIR=/p/run", "SYSTEMD_LOG_LEVEL=debug", "DEVSANDBOX_SCOPE_X=y", "DEVSANDBOX_SCOPE_ADDED=z", "DEVSANDBOX_LOADER_LD_PRELOAD=/p/x.so"},
		{"A=1"},
		{"DBUS_SYSTEM_BUS_ADDRESS=unix:path=/p/sys"},
	} {
		got := ScopeEnv(env, host)
		seen := map[string]string{}
		for _, kv := range got {
			n, v, _ := strings.Cut(kv, "=")
			if _, dup := seen[n]; dup {
				t.Errorf("ScopeEnv(%q) names %s twice", env, n)
			}
			seen[n] = v
		}
		for n, v := range host {
			if seen[n] != v {
				t.Errorf("ScopeEnv(%q): systemd-run gets %s=%q, want %q", env, n, seen[n], v)
			}
		}
		for n := range seen {
			if (strings.HasPrefix(n, "SYSTEMD_") || n == "DBUS_SYSTEM_BUS_ADDRESS") && !strings.HasPrefix(n, ScopeEnvPrefix) {
				t.Errorf("ScopeEnv(%q): systemd-run gets the command's %s", env, n)
			}
		}
		err := RestoreLoaderEnv(got, func(n, v string) error { seen[n] = v; return nil }, func(n string) error { delete(seen, n); return nil })
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]string{}
		for _, kv := range env {
			n, v, _ := strings.Cut(kv, "=")
			if o, ok := strings.CutPrefix(n, LoaderEnvPrefix); ok && LoaderVar(o) {
				n = o
			}
			want[n] = v
		}
		if !maps.Equal(seen, want) {
			t.Errorf("after the init, %q became %v, want %v", env, seen, want)
		}
	}
}
