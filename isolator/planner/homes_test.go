package planner

import (
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/devsandbox/devsandbox/tools"
)

func TestPasswdHomeOf(t *testing.T) {
	host := []byte("root:x:0:0:root:/root:/bin/bash\n+nis:x:1000::::\nu:x:1000:1000:U:/home/u:/bin/sh\nv:x:1000:1000::/home/v:/bin/sh")
	for uid, want := range map[int]string{0: "/root", 1000: "/home/u", 1001: ""} {
		if got := passwdHomeOf(host, uid); got != want {
			t.Errorf("passwdHomeOf(%d) = %q, want %q", uid, got, want)
		}
	}
}

// TestBuildOtherHome: HOME is not the passwd home. The host view masks the passwd home
// whole, before the sandbox home; a bind holding it gets the hide set masked there;
// the default view without binds reads /etc/passwd no more than it did (once, for
// the sandbox's passwd entry).
func TestBuildOtherHome(t *testing.T) {
	f := newFixture(t)
	pw := f.root + "/home/pw"
	mkdirs(t, pw+"/.ssh", pw+"/.aws")
	passwd := "u:x:1000:1000::" + pw + ":/bin/sh\n"
	reads := 0
	cwd := f.proj
	run := func(t *testing.T, system, ro []string) ([]string, error) {
		t.Helper()
		cfg := f.load(t)
		cfg.Sandbox.SystemBinds, cfg.Sandbox.ROBinds = system, ro
		pr := probe(cwd)
		read := pr.ReadRegular
		pr.ReadRegular = func(p string, max int64, follow bool) ([]byte, error) {
			if p == "/etc/passwd" {
				reads++
				return []byte(passwd), nil
			}
			return read(p, max, follow)
		}
		p, _, err := Build(cfg, tools.Default(), pr, Request{Command: []string{"true"}})
		if err != nil {
			return nil, err
		}
		return mountLines(p.Mounts), nil
	}
	t.Run("host view", func(t *testing.T) {
		got, err := run(t, []string{"host"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		mask := slices.Index(got, "maskdir "+pw+" (your home in /etc/passwd (sandbox.system_binds))")
		home := slices.IndexFunc(got, func(l string) bool { return strings.HasSuffix(l, "-> "+f.home+" (sandbox home)") })
		if mask < 0 || home < mask || slices.ContainsFunc(got, func(l string) bool { return strings.HasPrefix(l, "maskdir "+pw+"/") }) {
			t.Errorf("want the passwd home masked whole, before the sandbox home, and nothing in it masked again:\n%v", got)
		}
	})
	t.Run("bind holding it", func(t *testing.T) {
		got, err := run(t, nil, []string{f.root + "/home"})
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"maskdir " + pw + "/.ssh (sandbox.hide_paths)", "maskdir " + pw + "/.aws (sandbox.hide_paths)"} {
			if !slices.Contains(got, want) {
				t.Errorf("want %q in\n%v", want, got)
			}
		}
		if slices.ContainsFunc(got, func(l string) bool { return strings.HasPrefix(l, "maskdir "+pw+" ") }) {
			t.Errorf("a bind of the user's own is held to the hide set, not masked whole:\n%v", got)
		}
	})
	t.Run("bind of a hidden path", func(t *testing.T) {
		if _, err := run(t, nil, []string{pw + "/.ssh"}); err == nil {
			t.Errorf("a bind of the passwd home's ~/.ssh: want it refused")
		}
	})
	t.Run("default view reads nothing more", func(t *testing.T) {
		reads = 0
		if _, err := run(t, nil, nil); err != nil {
			t.Fatal(err)
		}
		if reads > 1 {
			t.Errorf("the default view read /etc/passwd %d times, want once (its passwd entry, sandboxPasswd)", reads)
		}
	})
	t.Run("mask that cannot be placed", func(t *testing.T) {
		loop := f.root + "/home/loop" // a link to itself: it cannot be resolved
		if err := os.Symlink("loop", loop); err != nil {
			t.Fatal(err)
		}
		passwd = "u:x:1000:1000::" + loop + ":/bin/sh\n"
		_, err := run(t, []string{"host"}, nil)
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), loop+", your home in /etc/passwd, and it cannot be masked") {
			t.Errorf("the passwd home cannot be resolved: want the run stopped naming it, got %v", err)
		}
	})
	t.Run("gone", func(t *testing.T) {
		passwd = "u:x:1000:1000::" + f.root + "/home/gone:/bin/sh\n"
		if _, err := run(t, []string{"host"}, nil); err != nil {
			t.Errorf("a passwd home that does not exist needs no mask: %v", err)
		}
	})
	t.Run("project holding it", func(t *testing.T) {
		srv := f.root + "/srv"
		mkdirs(t, srv+"/.git", srv+"/pw")
		passwd, cwd = "u:x:1000:1000::"+srv+"/pw:/bin/sh\n", srv
		defer func() { cwd = f.proj }()
		_, err := run(t, []string{"host"}, nil)
		if !errors.Is(err, ErrProject) || !strings.Contains(err.Error(), srv+" contains "+srv+"/pw, your home in /etc/passwd") {
			t.Errorf("a project holding the passwd home: want the run stopped naming it, got %v", err)
		}
	})
	// HOME is not the passwd home, and the project is that home or holds it (run
	// from ~ or from /home with HOME=/tmp/x): it would be bound read-write, ~/.ssh
	// and all, whatever the view. Refused as a project holding $HOME is, with
	// /etc/passwd read once for the launch all the same.
	t.Run("project is it", func(t *testing.T) {
		other := f.root + "/users/pw"
		mkdirs(t, other+"/.ssh")
		for _, tc := range []struct{ home, cwd, want string }{
			{pw, pw, pw + " is your home in /etc/passwd"},
			{other, f.root + "/users", f.root + "/users contains " + other + ", your home in /etc/passwd"},
		} {
			passwd = "u:x:1000:1000::" + tc.home + ":/bin/sh\n"
			cwd, reads = tc.cwd, 0
			_, err := run(t, nil, nil)
			if !errors.Is(err, ErrProject) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "HOME="+tc.home) {
				t.Errorf("run from %s: want the project refused (%q, the fix HOME=%s), got %v", tc.cwd, tc.want, tc.home, err)
			}
			if reads != 1 {
				t.Errorf("run from %s: /etc/passwd read %d times, want once", tc.cwd, reads)
			}
		}
		// A project below it stays allowed, as one below $HOME is.
		passwd, cwd = "u:x:1000:1000::"+pw+":/bin/sh\n", pw+"/.ssh"
		if _, err := run(t, nil, nil); err != nil {
			t.Errorf("a project below the passwd home: %v", err)
		}
		cwd = f.proj
	})
}

// TestBuildXDGOutsideHomes: the XDG base directories outside both homes are masked
// whole where the host view shows them, before the sandbox home; below the home,
// or in the default view, nothing is added; one that cannot be resolved stops the run.
func TestBuildXDGOutsideHomes(t *testing.T) {
	f := newFixture(t)
	cfgDir, cache, runtime := f.root+"/srv/cfg", f.root+"/srv/cache", f.root+"/srv/runtime"
	mkdirs(t, cfgDir+"/gh", cache, runtime)
	build := func(t *testing.T, system []string, env ...string) ([]string, error) {
		t.Helper()
		cfg := f.load(t, env...)
		cfg.Sandbox.SystemBinds = system
		p, _, err := Build(cfg, tools.Default(), probe(f.proj), Request{Command: []string{"true"}})
		if err != nil {
			return nil, err
		}
		return mountLines(p.Mounts), nil
	}
	got, err := build(t, []string{"host"}, "XDG_CONFIG_HOME="+cfgDir, "XDG_CACHE_HOME="+cache, "XDG_DATA_HOME="+f.root+"/srv/none", "XDG_RUNTIME_DIR="+runtime)
	if err != nil {
		t.Fatal(err)
	}
	home := slices.IndexFunc(got, func(l string) bool { return strings.HasSuffix(l, "-> "+f.home+" (sandbox home)") })
	for _, want := range []string{
		"maskdir " + cfgDir + " (your XDG_CONFIG_HOME outside your home (sandbox.system_binds))",
		"maskdir " + cache + " (your XDG_CACHE_HOME outside your home (sandbox.system_binds))",
		// The session's sockets (the D-Bus session bus): connect(2) ignores a read-only mount.
		"maskdir " + runtime + " (your XDG_RUNTIME_DIR outside your home (sandbox.system_binds))",
	} {
		if i := slices.Index(got, want); i < 0 || i > home {
			t.Errorf("want %q before the sandbox home in\n%v", want, got)
		}
	}
	if slices.ContainsFunc(got, func(l string) bool { return strings.Contains(l, "XDG_DATA_HOME") }) {
		t.Errorf("an XDG directory that does not exist needs no mask:\n%v", got)
	}
	got, err = build(t, nil, "XDG_CONFIG_HOME="+cfgDir)
	if err != nil {
		t.Fatal(err)
	}
	if slices.ContainsFunc(got, func(l string) bool { return strings.Contains(l, "XDG_") }) {
		t.Errorf("the default view shows no XDG directory outside the home; nothing to mask:\n%v", got)
	}
	loop := f.root + "/srv/loop"
	if err := os.Symlink("loop", loop); err != nil {
		t.Fatal(err)
	}
	if _, err := build(t, []string{"host"}, "XDG_CACHE_HOME="+loop); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), loop+" (XDG_CACHE_HOME)") {
		t.Errorf("an XDG directory that cannot be resolved: want the run stopped naming it, got %v", err)
	}
}
