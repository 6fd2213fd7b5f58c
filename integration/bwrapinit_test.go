//go:build integration

package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/devsandbox/devsandbox/internal/sh"
)

// bwrap runs the init installed next to devsandbox: devsandbox-bwrap-init, else
// devsandbox-init, else devsandbox itself; each is pid 1 at /run/devsandbox/init,
// starts the command and serves the proxy modes, and removes the GOMAXPROCS=1
// devsandbox added to its environment.
func TestBwrapInitFallback(t *testing.T) {
	requireBwrap(t)
	p := newProject(t)
	for _, c := range []struct {
		installed []string
		init      string // the one bwrap runs
	}{
		{[]string{"devsandbox", "devsandbox-init", "devsandbox-bwrap-init", "devsandbox-proxy"}, "devsandbox-bwrap-init"},
		{[]string{"devsandbox", "devsandbox-init", "devsandbox-proxy"}, "devsandbox-init"},
		{[]string{"devsandbox", "devsandbox-proxy"}, "devsandbox"},
	} {
		t.Run(c.init, func(t *testing.T) {
			dir, err := os.MkdirTemp("", "devsandbox-it-init-")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(dir) })
			if err := os.Chmod(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			var want int
			for _, name := range c.installed {
				data, err := os.ReadFile(filepath.Join(filepath.Dir(it.bin), name))
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, name), data, 0o755); err != nil {
					t.Fatal(err)
				}
				if name == c.init {
					want = len(data)
				}
			}
			// The init starts with GOMAXPROCS=1 that devsandbox added for it alone
			// (wire.UnsetGOMAXPROCSArg): the command gets no GOMAXPROCS, or the
			// value its environment was given.
			for _, run := range []struct {
				mode, procs string
				args        []string
			}{
				{"open", "unset", nil},
				{"proxy", "unset", nil},
				{"open", "3", []string{"-e", "GOMAXPROCS=3"}},
			} {
				args := append(append([]string{"--isolator=bwrap", "--egress=" + run.mode}, run.args...), "--",
					"/bin/sh", "-c", `stat -c %s /run/devsandbox/init; echo "procs=${GOMAXPROCS-unset}"; exit 3`)
				r := runBin(t, filepath.Join(dir, "devsandbox"), p.dir, nil, "", args...)
				if wantOut := strconv.Itoa(want) + "\nprocs=" + run.procs; r.code != 3 || strings.TrimSpace(r.stdout) != wantOut {
					t.Errorf("--egress=%s %q: want exit 3 with %s (%d bytes) as the init and GOMAXPROCS %s:\n%s", run.mode, run.args, c.init, want, run.procs, r)
				}
			}
		})
	}
}

// An init installed in a system directory the view binds read-only (as `make
// install` puts it under /usr/local) runs where it is, without a bind at
// /run/devsandbox/init, but only as that very file. Attacks: a run of the sandbox
// plants an init in its home; the installed init is a link into the home (the
// sandbox resolves it in its own home, to the planted one), or a host mount puts a
// directory the sandbox writes over the init's. Either way the real init must be
// bound at /run/devsandbox/init and the planted one never run.
func TestBwrapInitInView(t *testing.T) {
	requireBwrap(t)
	p := newProject(t)
	sys, err := os.MkdirTemp("/var/tmp", "devsandbox-it-sys-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sys) })
	bin := filepath.Join(sys, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(sys, 0o755); err != nil {
		t.Fatal(err)
	}
	var initData []byte
	for _, name := range []string{"devsandbox", "devsandbox-init", "devsandbox-bwrap-init", "devsandbox-proxy"} {
		data, err := os.ReadFile(filepath.Join(filepath.Dir(it.bin), name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(bin, name), data, 0o755); err != nil {
			t.Fatal(err)
		}
		if name == "devsandbox-bwrap-init" {
			initData = data
		}
	}
	init := filepath.Join(bin, "devsandbox-bwrap-init")
	marker := filepath.Join(p.dir, "planted-init-ran")
	fake := "#!/bin/sh\necho ran > " + marker + "\n"
	config := fmt.Sprintf("[sandbox]\nsystem_binds = [\"/usr\", \"/bin\", \"/lib\", \"/lib64\", %q]\n", sys)
	where := `if [ -e /run/devsandbox/init ]; then echo bound; else echo in place; fi; `
	sandbox := func(t *testing.T, config, script string) result {
		t.Helper()
		cfg := p.writeConfig("bwrap", "init-view.toml", config)
		return runBin(t, filepath.Join(bin, "devsandbox"), p.dir, nil, "", "--isolator=bwrap", "--config", cfg, "--egress=open", "--",
			"/bin/sh", "-c", where+script+"; exit 3")
	}
	check := func(t *testing.T, r result, want string) {
		t.Helper()
		if r.code != 3 || strings.TrimSpace(r.stdout) != want {
			t.Errorf("want exit 3 with the init %s:\n%s", want, r)
		}
		if _, err := os.Stat(marker); err == nil {
			t.Errorf("the init the sandbox planted ran as its pid 1:\n%s", r)
			os.Remove(marker)
		}
	}

	// In the view: run in place. The run plants an init in its home.
	check(t, sandbox(t, config, fmt.Sprintf("mkdir -p ~/planted && printf %%s %s > ~/planted/devsandbox-bwrap-init && chmod 755 ~/planted/devsandbox-bwrap-init",
		sh.Quote(fake))), "in place")

	t.Run("a link into the home", func(t *testing.T) {
		// On the host the link leads to the real init, in the sandbox to the planted one.
		hostDir := filepath.Join(it.home, "planted")
		if _, err := os.Lstat(hostDir); err == nil {
			t.Fatalf("%s exists: the test would remove it", hostDir)
		}
		t.Cleanup(func() { os.RemoveAll(hostDir) })
		writeHome(t, "planted/devsandbox-bwrap-init", string(initData))
		if err := os.Chmod(filepath.Join(hostDir, "devsandbox-bwrap-init"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Remove(init); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(filepath.Join(hostDir, "devsandbox-bwrap-init"), init); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			os.Remove(init)
			os.WriteFile(init, initData, 0o755)
		})
		check(t, sandbox(t, config, "true"), "bound")
	})

	t.Run("a writable directory mounted over it", func(t *testing.T) {
		p.write("plant/devsandbox-bwrap-init", fake)
		if err := os.Chmod(p.path("plant/devsandbox-bwrap-init"), 0o755); err != nil {
			t.Fatal(err)
		}
		check(t, sandbox(t, config+fmt.Sprintf("host_mounts = [%q]\n", p.path("plant")+":"+bin), "true"), "bound")
	})
}

// The init, pid 1, is out of the sandbox's reach: it holds the readiness socket to
// devsandbox while the command starts (the report follows the command's start), and
// a command that reached it could forge the report. Nothing in the sandbox may list
// or open its descriptors, read its environment or memory, or trace it.
func TestBwrapInitUnreachable(t *testing.T) {
	requireBwrap(t)
	p := newProject(t)
	script := `ls /proc/1/fd >/dev/null 2>&1 && echo "LISTED /proc/1/fd"
for fd in 0 1 2 3 4 5 6; do readlink /proc/1/fd/$fd >/dev/null 2>&1 && echo "REACHED /proc/1/fd/$fd"; done
head -c1 /proc/1/environ >/dev/null 2>&1 && echo "READ /proc/1/environ"
head -c1 /proc/1/mem >/dev/null 2>&1 && echo "READ /proc/1/mem"
readlink /proc/1/cwd >/dev/null 2>&1 && echo "REACHED /proc/1/cwd"
readlink /proc/1/exe >/dev/null 2>&1 && echo "REACHED /proc/1/exe"
echo done`
	for _, mode := range []string{"open", "proxy"} {
		out := p.mustSandbox("bwrap", []string{"--egress=" + mode}, script)
		if strings.TrimSpace(out) != "done" {
			t.Errorf("--egress=%s: the sandbox reached the init:\n%s", mode, out)
		}
	}
}
