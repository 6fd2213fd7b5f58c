package wire

import (
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
