//go:build integration

package integration

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
)

// Guarantee 8: off runs unsandboxed with a loud warning; auto runs unsandboxed only when
// no isolator is usable (prod turns it into enforce); enforce fails closed.
func TestModes(t *testing.T) {
	requireBwrap(t)
	p := newProject(t)
	writeHome(t, ".ssh/mode-bait", "BAIT\n")
	check := `read l 2>/dev/null < ~/.ssh/mode-bait && echo "$l" || echo sandboxed`

	off := run(t, p.dir, nil, "", "--mode=off", "--", "/bin/sh", "-c", check)
	if off.code != 0 || off.stdout != "BAIT\n" || !strings.Contains(off.stderr, "WITHOUT a sandbox") {
		t.Errorf("mode off:\n%s", off)
	}
	enforce := run(t, p.dir, nil, "", "--", "/bin/sh", "-c", check)
	if enforce.code != 0 || enforce.stdout != "sandboxed\n" {
		t.Errorf("mode enforce:\n%s", enforce)
	}
	// No usable isolator: PATH without bwrap, and no docker engine.
	noBwrap := []string{"PATH=/nonexistent", "DOCKER_HOST=unix:///nonexistent.sock"}
	for _, tt := range []struct {
		name   string
		cfg    string
		code   int
		stdout string
	}{
		{"auto without an isolator runs unsandboxed", "[sandbox]\nmode = \"auto\"\n", 0, "BAIT\n"},
		{"auto in prod fails closed", "[sandbox]\nmode = \"auto\"\nenvironment = \"prod\"\n", 125, ""},
		{"enforce fails closed", "[sandbox]\nmode = \"enforce\"\n", 125, ""},
	} {
		p.write("mode.toml", tt.cfg)
		r := run(t, p.dir, noBwrap, "", "--config", p.path("mode.toml"), "--", "/bin/sh", "-c", check)
		if r.code != tt.code || r.stdout != tt.stdout || (tt.code == 0 && !strings.Contains(r.stderr, "devsandbox: warning: no isolator can run here (")) {
			t.Errorf("%s:\n%s", tt.name, r)
		}
		if tt.code == 125 && !strings.Contains(r.stderr, "install bubblewrap") {
			t.Errorf("%s: the failure does not say how to fix it:\n%s", tt.name, r)
		}
	}
}

// mode auto with an isolator chosen that cannot run: the warning names that isolator
// ("no sandbox is available" would be false where another one works); none other is
// tried.
func TestModeAutoChosenIsolator(t *testing.T) {
	requireBwrap(t)
	p := newProject(t)
	writeHome(t, ".ssh/mode-bait", "BAIT\n")
	r := run(t, p.dir, []string{"PATH=/nonexistent"}, "", "--mode=auto", "--isolator=bwrap", "--",
		"/bin/sh", "-c", `read l 2>/dev/null < ~/.ssh/mode-bait && echo "$l" || echo sandboxed`)
	if r.code != 0 || r.stdout != "BAIT\n" || !strings.HasPrefix(r.stderr, "devsandbox: warning: the bwrap isolator cannot run (") ||
		!strings.Contains(r.stderr, "so the command runs WITHOUT a sandbox") {
		t.Errorf("auto, bwrap chosen, not installed:\n%s", r)
	}
}

// --read-only: the project is read-only except .git (minus hooks and config) and the
// writable dirs.
func TestReadOnlyProject(t *testing.T) {
	forEachIsolator(t, func(t *testing.T, iso string) {
		p := newProject(t)
		p.mkdir("proj/build")
		p.write("proj/src.txt", "src\n")
		ro := p.writeConfig(iso, "ro.toml", "[sandbox]\nwritable_dirs = [\"build\"]\n")
		out := p.mustSandbox(iso, []string{"--read-only", "--config", ro}, `
			echo x >> src.txt 2>/dev/null && echo SRC-WRITTEN
			echo x > build/out && echo build-ok
			touch .git/index.lock && rm .git/index.lock && echo git-ok
			touch .git/hooks/x 2>/dev/null && echo HOOK-WRITTEN
			true`)
		if out != "build-ok\ngit-ok\n" {
			t.Fatalf("read-only project:\n%s", out)
		}
	})
}

// TestReadOnlyProtectedParents: in a read-only project, a directory holding a file
// host tools run (.cursor/mcp.json, a sub-directory's toolchain file, a file the git
// config includes) is a mount point, and read-only like the project around it: the
// sandbox can neither add to it, nor change, rename or remove the file. Under a
// sandbox.writable_dirs entry the directory stays writable, the file read-only; an
// entry below such a read-only directory (gitinc/w) stays writable too.
// Before, the mount point was bound read-write: the sandbox could create .cursor/new
// on the host while the project was read-only.
func TestReadOnlyProtectedParents(t *testing.T) {
	forEachIsolator(t, func(t *testing.T, iso string) {
		files := map[string]string{
			".cursor/mcp.json":             "{}\n",
			"crates/a/rust-toolchain.toml": "[toolchain]\nchannel = \"stable\"\n",
			"gitinc/extra":                 "[user]\n\tname = x\n",
		}
		dirs := []string{".cursor", "crates/a", "gitinc", "gitinc/w"}
		script := ""
		for _, d := range dirs {
			script += fmt.Sprintf("touch %s/new 2>/dev/null && echo NEW %s; mkdir %s/newdir 2>/dev/null && echo MKDIR %s; ", d, d, d, d)
		}
		for _, f := range slices.Sorted(maps.Keys(files)) {
			script += fmt.Sprintf("echo x >> %s 2>/dev/null && echo WROTE %s; mv %s %s.moved 2>/dev/null && echo RENAMED %s; rm -f %s 2>/dev/null && echo REMOVED %s; ", f, f, f, f, f, f, f)
		}
		script += "true"
		for _, c := range []struct {
			name, config, want string
		}{
			{"read-only", "[sandbox]\n", ""},
			{"writable_dirs", "[sandbox]\nwritable_dirs = [\".cursor\", \"crates\", \"gitinc/w\"]\n",
				"NEW .cursor\nMKDIR .cursor\nNEW crates/a\nMKDIR crates/a\nNEW gitinc/w\nMKDIR gitinc/w\n"},
		} {
			t.Run(c.name, func(t *testing.T) {
				p := newProject(t)
				for f, content := range files {
					p.write("proj/"+f, content)
				}
				p.mkdir("proj/gitinc/w")
				p.write("proj/.git/config", "[core]\n\trepositoryformatversion = 0\n[include]\n\tpath = ../gitinc/extra\n")
				ro := p.writeConfig(iso, "ro.toml", c.config)
				if out := p.mustSandbox(iso, []string{"--read-only", "--config", ro}, script); out != c.want {
					t.Errorf("got:\n%s\nwant:\n%s", out, c.want)
				}
				for f, content := range files {
					if b, err := os.ReadFile(p.path("proj/" + f)); err != nil || string(b) != content {
						t.Errorf("%s on the host: %q, %v", f, b, err)
					}
				}
				if c.want != "" {
					return
				}
				for _, d := range dirs {
					for _, n := range []string{"new", "newdir"} {
						if _, err := os.Lstat(p.path("proj/" + d + "/" + n)); err == nil {
							t.Errorf("the sandbox created %s/%s on the host", d, n)
						}
					}
				}
			})
		}
	})
}

// sandbox.tmp = "shm" and "tmpfs" give a private, empty /tmp too.
func TestTmpKinds(t *testing.T) {
	forEachIsolator(t, func(t *testing.T, iso string) {
		p := newProject(t)
		for _, kind := range []string{"shm", "tmpfs"} {
			cfg := p.writeConfig(iso, "tmp.toml", "[sandbox]\ntmp = \""+kind+"\"\n")
			out := p.mustSandbox(iso, []string{"--config", cfg}, `ls -A /tmp; echo $$ > /tmp/x && cat /tmp/x >/dev/null && echo ok`)
			if out != "ok\n" {
				t.Errorf("tmp %s:\n%s", kind, out)
			}
		}
	})
}

// Trust: an untrusted project file is ignored with a warning; after `config trust` it
// applies; once it changes the run stops (125) until it is trusted again.
func TestProjectTrust(t *testing.T) {
	requireBwrap(t)
	p := newProject(t)
	p.write("proj/.devsandbox.toml", "[env]\nset = { FROM_PROJECT = \"one\" }\n")
	t.Cleanup(func() { os.Remove(it.home + "/.config/devsandbox/trusted.toml") })
	show := `echo "[$FROM_PROJECT]"`
	if r := p.sandbox("bwrap", nil, show); r.code != 0 || r.stdout != "[]\n" || !strings.Contains(r.stderr, "devsandbox config trust") {
		t.Fatalf("untrusted file:\n%s", r)
	}
	if r := run(t, p.dir, nil, "", "config", "trust"); r.code != 0 {
		t.Fatalf("config trust:\n%s", r)
	}
	if r := p.sandbox("bwrap", nil, show); r.code != 0 || r.stdout != "[one]\n" {
		t.Fatalf("trusted file not applied:\n%s", r)
	}
	p.write("proj/.devsandbox.toml", "[env]\nset = { FROM_PROJECT = \"two\" }\n")
	if r := p.sandbox("bwrap", nil, show); r.code != 125 || !strings.Contains(r.stderr, "changed since it was trusted") {
		t.Fatalf("changed file did not stop the run:\n%s", r)
	}
	// A project file may not loosen the user's protections: trust refuses it with the
	// message a run would give, and records nothing, so the run still stops.
	p.write("proj/.devsandbox.toml", "[sandbox]\ndocker_socket = true\n")
	want := "devsandbox: " + p.dir + "/.devsandbox.toml:2: sandbox.docker_socket: true is looser than false (the default); a project file may only make the sandbox stricter: set it in your user config (" + it.home + "/.config/devsandbox/config.toml)\n"
	if r := run(t, p.dir, nil, "", "config", "trust"); r.code != 125 || r.stderr != want {
		t.Fatalf("config trust of a loosening project file:\n%s\nwant stderr %q", r, want)
	}
	if r := p.sandbox("bwrap", nil, show); r.code != 125 || !strings.Contains(r.stderr, "changed since it was trusted") {
		t.Fatalf("a loosening project file:\n%s", r)
	}
}
