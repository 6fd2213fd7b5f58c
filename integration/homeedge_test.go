//go:build integration

package integration

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestProjectHoldingPasswdHomeRefused: a project that is, or contains, the user's
// passwd home is refused when HOME names another directory (a CI runner, `sudo -u`,
// `HOME=/tmp/x devsandbox` run from ~ or from /home), as one that is or contains
// $HOME is: the project is bound read-write, so the sandbox would read and rewrite
// the real home's ~/.ssh, ~/.aws and shell startup files. It runs as the second test
// user, whose passwd home the test makes, from that home and from its parent. Bait in
// ~/.ssh must be neither read nor written, and the run exits 125 naming the passwd
// home. The refusal is the planner's, before any isolator is asked: every isolator's
// run is refused alike.
func TestProjectHoldingPasswdHomeRefused(t *testing.T) {
	p := newPwUser(t)
	bait := p.file(t, ".ssh/id_ed25519", "PASSWD-HOME-BAIT\n")
	forEachIsolator(t, func(t *testing.T, iso string) {
		name := iso
		if iso != "bwrap" && iso != "krun" {
			name = "docker" // the variants differ by engine address, which no run here reaches
		}
		for _, cwd := range []string{p.pwHome, filepath.Dir(p.pwHome)} {
			script := `cat "$1"/.ssh/id_ed25519; echo SANDBOX-WROTE >> "$1"/.ssh/id_ed25519; echo done`
			r := p.run(t, cwd, nil, "--isolator="+name, "--egress=none", "--", "/bin/sh", "-c", script, "sh", p.pwHome)
			got, err := os.ReadFile(bait)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != "PASSWD-HOME-BAIT\n" || strings.Contains(r.stdout, "BAIT") {
				t.Errorf("run from %s with HOME=%s: the sandbox read or wrote the passwd home's ~/.ssh (now %q):\n%s", cwd, p.home, got, r)
			}
			if r.code != 125 || !strings.Contains(r.stderr, p.pwHome) || !strings.Contains(r.stderr, "your home in /etc/passwd") {
				t.Errorf("run from %s with HOME=%s: want exit 125 naming %s as your home in /etc/passwd; got:\n%s", cwd, p.home, p.pwHome, r)
			}
			if err := os.WriteFile(bait, []byte("PASSWD-HOME-BAIT\n"), 0o600); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// TestHostViewXDGOutsideHomesMasked: with system_binds = ["host"] and the XDG base
// directories outside both homes (XDG_CONFIG_HOME=/srv/cfg and the like), the host
// root showed them read-only: devsandbox's own directories there were masked, but
// other tools' secrets ($XDG_CONFIG_HOME/gh/hosts.yml, the hide set's ~/.config/gcloud
// at $XDG_CONFIG_HOME/gcloud, tokens in data, state and cache) were readable. Each such
// directory is masked whole. bwrap only: docker and krun take the system from the
// image, where the host's directories are not.
func TestHostViewXDGOutsideHomesMasked(t *testing.T) {
	requireBwrap(t)
	p := newProject(t)
	root, err := os.MkdirTemp("/var/tmp", "dsb-xdg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	baits := map[string]string{"config": "gh/hosts.yml", "data": "tok/token", "state": "tok/token", "cache": "tok/token"}
	var env []string
	var paths []string
	for kind, rel := range baits {
		dir := filepath.Join(root, kind)
		full := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(full), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte("XDG-BAIT\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		env = append(env, "XDG_"+strings.ToUpper(kind)+"_HOME="+dir)
		paths = append(paths, full)
	}
	gcloud := filepath.Join(root, "config", "gcloud", "credentials.db")
	if err := os.MkdirAll(filepath.Dir(gcloud), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(gcloud, []byte("XDG-BAIT\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	paths = append(paths, gcloud)
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatal(err)
	}
	_ = filepath.WalkDir(root, func(p string, _ fs.DirEntry, err error) error {
		if err == nil {
			err = os.Lchown(p, it.uid, it.gid)
		}
		return err
	})
	cfg := p.writeConfig("bwrap", "hostview.toml", "[sandbox]\nsystem_binds = [\"host\"]\n")
	args := append([]string{"--isolator=bwrap", "--config", cfg, "--egress=none", "--", "/bin/sh", "-c", `cat "$@" 2>/dev/null; echo done`, "sh"}, paths...)
	r := run(t, p.dir, env, "", args...)
	if r.code != 0 || r.stdout != "done\n" {
		t.Fatalf("with system_binds = [\"host\"] and the XDG directories in %s: want none of their files readable (exit 0, only \"done\"), got:\n%s", root, r)
	}
}

// TestHostViewXDGToolFileShown: an XDG directory outside both homes is masked whole
// in the host view, and a tool's binding of a file in it at its own host path (git's
// GIT_CONFIG_GLOBAL there, passed, so git reads it there) still shows on top of the
// mask: the masks go before the tool bindings. The directory's other files stay
// hidden. bwrap only, as TestHostViewXDGOutsideHomesMasked.
func TestHostViewXDGToolFileShown(t *testing.T) {
	requireBwrap(t)
	p := newProject(t)
	root, err := os.MkdirTemp("/var/tmp", "dsb-xdgtool-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	cfgHome := filepath.Join(root, "config")
	global := filepath.Join(cfgHome, "git", "global")
	bait := filepath.Join(cfgHome, "gh", "hosts.yml")
	for f, content := range map[string]string{global: "[user]\n\tname = dsb-xdg-tool\n", bait: "XDG-BAIT\n"} {
		if err := os.MkdirAll(filepath.Dir(f), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatal(err)
	}
	_ = filepath.WalkDir(root, func(p string, _ fs.DirEntry, err error) error {
		if err == nil {
			err = os.Lchown(p, it.uid, it.gid)
		}
		return err
	})
	cfg := p.writeConfig("bwrap", "hostview.toml", "[sandbox]\nsystem_binds = [\"host\"]\n")
	env := []string{"XDG_CONFIG_HOME=" + cfgHome, "GIT_CONFIG_GLOBAL=" + global}
	script := `git config --global --get user.name; cat "$1" 2>/dev/null; ls -A "$2" 2>/dev/null; echo done`
	r := run(t, p.dir, env, "", "--isolator=bwrap", "--config", cfg, "--egress=none", "--", "/bin/sh", "-c", script, "sh", bait, cfgHome)
	if want := "dsb-xdg-tool\ngit\ndone\n"; r.code != 0 || r.stdout != want {
		t.Fatalf("with system_binds = [\"host\"], XDG_CONFIG_HOME=%s and GIT_CONFIG_GLOBAL in it: want git's file shown and nothing else of the directory (exit 0 and\n%s), got:\n%s", cfgHome, want, r)
	}
}
