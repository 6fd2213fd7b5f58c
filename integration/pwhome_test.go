//go:build integration

package integration

import (
	"context"
	"io/fs"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// pwHomeUserName is the second test user (scripts/setup-test-env.sh), whose home in
// /etc/passwd the tests below make and remove themselves: the passwd-home checks are
// tested there, never in the first test user's own home.
const pwHomeUserName = "dsbpwhome"

// pwUser is the second test user with its passwd home made, empty, for one test, and
// a throwaway HOME of its own (the HOME devsandbox runs with: not the passwd home).
type pwUser struct {
	uid, gid int
	name     string
	pwHome   string // its home in /etc/passwd, made for the test, removed after it
	home     string // the HOME its runs get
}

// newPwUser skips unless the suite runs as root and the second test user exists
// (it fails in CI): the tests run devsandbox as that user.
func newPwUser(t *testing.T) *pwUser {
	t.Helper()
	fail := t.Skipf
	if os.Getenv("CI") != "" {
		fail = t.Fatalf
	}
	if os.Getuid() != 0 {
		fail("the passwd-home tests run devsandbox as %s: the suite must run as root", pwHomeUserName)
	}
	u, err := user.Lookup(pwHomeUserName)
	if err != nil {
		fail("second test user %s: %v (run scripts/setup-test-env.sh as root)", pwHomeUserName, err)
	}
	if u.HomeDir == "" || !filepath.IsAbs(u.HomeDir) || filepath.Clean(u.HomeDir) == "/" {
		t.Fatalf("second test user %s: unusable home %q in /etc/passwd", pwHomeUserName, u.HomeDir)
	}
	p := &pwUser{name: pwHomeUserName, pwHome: filepath.Clean(u.HomeDir)}
	p.uid, _ = strconv.Atoi(u.Uid)
	p.gid, _ = strconv.Atoi(u.Gid)
	// The directory holding it is the test's too (root's, 0755): runs start there.
	parent := filepath.Dir(p.pwHome)
	if _, err := os.Lstat(parent); err == nil {
		t.Fatalf("%s exists: another run of these tests, or one that did not clean up; remove it", parent)
	}
	if err := os.Mkdir(parent, 0o755); err != nil {
		t.Fatalf("making the second test user's home: %v (its home in /etc/passwd must be in a directory the test can make, such as /var/tmp/dsb-pwhome/home)", err)
	}
	t.Cleanup(func() { os.RemoveAll(parent) })
	if err := os.Mkdir(p.pwHome, 0o700); err != nil {
		t.Fatal(err)
	}
	home, err := os.MkdirTemp("/var/tmp", "dsb-pwhome-run-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(home) })
	p.home = home
	for _, d := range []string{p.pwHome, p.home} {
		if err := os.Chown(d, p.uid, p.gid); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

// file writes content to rel below the passwd home, owned by the user.
func (p *pwUser) file(t *testing.T, rel, content string) string {
	t.Helper()
	full := filepath.Join(p.pwHome, rel)
	if err := os.MkdirAll(filepath.Dir(full), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(full, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	for d := full; d != p.pwHome; d = filepath.Dir(d) {
		if err := os.Chown(d, p.uid, p.gid); err != nil {
			t.Fatal(err)
		}
	}
	return full
}

// userConfig writes the user's devsandbox configuration (no trust needed).
func (p *pwUser) userConfig(t *testing.T, content string) {
	t.Helper()
	dir := filepath.Join(p.home, ".config", "devsandbox")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.toml"), []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	for d := filepath.Join(dir, "config.toml"); d != p.home; d = filepath.Dir(d) {
		if err := os.Chown(d, p.uid, p.gid); err != nil {
			t.Fatal(err)
		}
	}
}

// project makes a git project at parent/proj (parent made too, both the user's) with
// a file in it, and returns its directory.
func (p *pwUser) project(t *testing.T, parent string) string {
	t.Helper()
	dir := filepath.Join(parent, "proj")
	for _, d := range []string{parent, dir, dir + "/.git", dir + "/.git/objects", dir + "/.git/refs"} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, content := range map[string]string{".git/HEAD": "ref: refs/heads/main\n", "file": "PROJECT-FILE\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_ = filepath.WalkDir(parent, func(f string, _ fs.DirEntry, err error) error {
		if err == nil {
			err = os.Lchown(f, p.uid, p.gid)
		}
		return err
	})
	return dir
}

// run runs devsandbox as the user in dir with its throwaway HOME.
func (p *pwUser) run(t *testing.T, dir string, extraEnv []string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	env := append([]string{"HOME=" + p.home, "USER=" + p.name, "LOGNAME=" + p.name,
		hostPath("/usr/local/bin:/usr/bin:/bin"), "LANG=C.UTF-8", "SHELL=/bin/sh"}, xdgEnv(p.home)...)
	cmd := exec.CommandContext(ctx, it.bin, args...)
	cmd.Dir = dir
	cmd.Env = append(env, extraEnv...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(p.uid), Gid: uint32(p.gid), Groups: []uint32{}}}
	cmd.WaitDelay = 5 * time.Second
	return runResult(t, cmd)
}

// TestPasswdHomeConfigNotRead: a project that is the user's passwd home (HOME set
// elsewhere) is refused, and every command refuses it before it reads the project's
// files: `config trust` trusted the home's .devsandbox.toml (exit 0, a trust record
// written), and a run, --dry-run, `config show` and `tools list` read it (an error
// about its trust) before the planner's refusal. Each must exit 125 naming the
// passwd home, say nothing of the file, and leave no trust record.
func TestPasswdHomeConfigNotRead(t *testing.T) {
	requireBwrap(t)
	p := newPwUser(t)
	p.file(t, ".devsandbox.toml", "[sandbox]\nread_only = true\n")
	p.file(t, ".ssh/id_ed25519", "PASSWD-HOME-BAIT\n")
	trusted := filepath.Join(p.home, ".config", "devsandbox", "trusted.toml")
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"run", []string{"--isolator=bwrap", "--egress=none", "--", "/bin/sh", "-c", "cat .ssh/id_ed25519; echo ran"}},
		{"dry-run", []string{"--isolator=bwrap", "--egress=none", "--dry-run", "--", "true"}},
		{"config show", []string{"config", "show"}},
		{"config trust", []string{"config", "trust"}},
		{"tools list", []string{"tools", "list"}},
	} {
		t.Run(strings.ReplaceAll(tc.name, " ", "-"), func(t *testing.T) {
			r := p.run(t, p.pwHome, nil, tc.args...)
			if r.code != 125 || !strings.Contains(r.stderr, p.pwHome+" is your home in /etc/passwd") ||
				strings.Contains(r.stdout+r.stderr, ".devsandbox.toml") || strings.Contains(r.stdout, "BAIT") {
				t.Errorf("devsandbox %s from the passwd home %s with HOME=%s: want exit 125 naming it as your home in /etc/passwd, before its .devsandbox.toml is read; got:\n%s",
					strings.Join(tc.args, " "), p.pwHome, p.home, r)
			}
			if _, err := os.Lstat(trusted); err == nil {
				data, _ := os.ReadFile(trusted)
				os.Remove(trusted)
				t.Errorf("devsandbox %s wrote a trust record for the passwd home's file:\n%s", strings.Join(tc.args, " "), data)
			}
		})
	}
}

// TestHostViewPasswdHomeMasked: with system_binds = ["host"] and a HOME other than the
// user's passwd home (a CI runner, `sudo -u`, `HOME=/tmp/x devsandbox`), the host
// root showed the passwd home read-only, and the user's own 0600 files in it with it:
// hide_paths were expanded below $HOME only, so ~/.ssh/id_ed25519 and
// ~/.aws/credentials of the passwd home were listed, and files no list names (shell
// history) read inside. The passwd home is masked
// whole (an empty read-only directory); a project in it (~/src/app) shows through the
// mask, and nothing else of the home does. It runs as the second test user, whose
// passwd home the test makes. bwrap only: docker and krun take the system from the
// image and bind nothing else of the host (guarantee 11), so the home is not there.
func TestHostViewPasswdHomeMasked(t *testing.T) {
	requireBwrap(t)
	p := newPwUser(t)
	for _, rel := range []string{".ssh/id_ed25519", ".aws/credentials", ".bash_history"} {
		p.file(t, rel, "PASSWD-HOME-BAIT\n")
	}
	p.userConfig(t, "[sandbox]\nsystem_binds = [\"host\"]\n")
	h := p.pwHome
	script := `cat ` + h + `/.ssh/id_ed25519 ` + h + `/.aws/credentials ` + h + `/.bash_history 2>/dev/null
		ls -A ` + h + ` 2>/dev/null
		echo done`
	outside := p.project(t, filepath.Join(p.home, "..", filepath.Base(p.home)+"-proj"))
	t.Cleanup(func() { os.RemoveAll(filepath.Dir(outside)) })
	r := p.run(t, outside, nil, "--isolator=bwrap", "--egress=none", "--", "/bin/sh", "-c", script)
	if r.code != 0 || r.stdout != "done\n" {
		t.Fatalf("with system_binds = [\"host\"] and HOME=%s, the passwd home %s: want it empty (exit 0, only \"done\"), got:\n%s", p.home, h, r)
	}
	in := p.project(t, filepath.Join(h, "src"))
	r = p.run(t, in, nil, "--isolator=bwrap", "--egress=none", "--", "/bin/sh", "-c", `cat file; `+script)
	if want := "PROJECT-FILE\nsrc\ndone\n"; r.code != 0 || r.stdout != want {
		t.Fatalf("a project in the passwd home %s with the host view: want exit 0 and\n%s\ngot:\n%s", h, want, r)
	}
}
