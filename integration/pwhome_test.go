//go:build integration

package integration

import (
	"context"
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
	if _, err := os.Lstat(p.pwHome); err == nil {
		t.Fatalf("%s exists: another run of these tests, or one that did not clean up; remove it", p.pwHome)
	}
	if err := os.Mkdir(p.pwHome, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(p.pwHome) })
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
