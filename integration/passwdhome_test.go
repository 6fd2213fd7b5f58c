//go:build integration

package integration

import (
	"bytes"
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestPasswdHomeIsSandboxHome: OpenSSH finds ~/.ssh/config through the passwd entry
// (getpwuid), not $HOME. The suite's HOME is a throwaway directory that the test
// user's passwd entry does not name (as a CI runner's, `sudo -u`'s or
// `HOME=/elsewhere devsandbox` would be), so inside every isolator the user's passwd
// entry must name the sandbox's $HOME: then a plain `ssh -G` (no -F) reads the config
// the ssh tool writes there (its ProxyCommand), and nothing of the user's real passwd
// home shows. The sandbox's /etc/passwd stays read-only and the host's is unchanged.
// A second run with yet another HOME, sharing the state directory (so the same /etc
// snapshot), sees its own home: the per-run passwd is not kept in the shared snapshot.
func TestPasswdHomeIsSandboxHome(t *testing.T) {
	forEachIsolator(t, testPasswdHomeIsSandboxHome)
}

func testPasswdHomeIsSandboxHome(t *testing.T, iso string) {
	p := newProject(t)
	hostBefore, err := os.ReadFile("/etc/passwd")
	if err != nil {
		t.Fatal(err)
	}
	script := `pw=$(getent passwd "$(id -u)" | cut -d: -f6)
echo "PWHOME=$pw"
echo "HOME=$HOME"
ssh -G dsb-passwd.test 2>&1 | grep -i '^proxycommand' | sed 's/^/SSHG /'
if [ "$HOME" != "$1" ]; then ls -A "$1" 2>/dev/null | sed 's/^/REAL /'; fi
grep -q '^root:' /etc/passwd && echo ROOT_ENTRY
(echo 'x:x:0:0::/:/bin/sh' >>/etc/passwd) 2>/dev/null && echo WROTE_PASSWD
true`
	// Not below the suite's HOME: the containers' home (docker.home) is that one, and
	// devsandbox refuses a docker.home holding the host home.
	home2, err := os.MkdirTemp("/var/tmp", "dsb-otherhome-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(home2) })
	if err := os.Chmod(home2, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(home2, it.uid, it.gid); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		env  []string
	}{
		{"suite HOME", nil},
		{"another HOME, same state", []string{"HOME=" + home2}},
	} {
		r := run(t, p.dir, tc.env, "", "--isolator="+iso, "--egress=proxy", "--", "/bin/sh", "-c", script, "sh", it.realHome)
		if r.code != 0 {
			t.Fatalf("%s: the run failed:\n%s", tc.name, r)
		}
		home := regexp.MustCompile(`(?m)^HOME=(.*)$`).FindStringSubmatch(r.stdout)
		if home == nil || !strings.Contains(r.stdout, "PWHOME="+home[1]+"\n") {
			t.Errorf("%s: the user's passwd entry does not name the sandbox's $HOME:\n%s", tc.name, r)
		}
		if !regexp.MustCompile(`(?m)^SSHG proxycommand .*--connect=`).MatchString(r.stdout) {
			t.Errorf("%s: ssh -G (no -F) did not read the ~/.ssh/config devsandbox writes (its ProxyCommand):\n%s", tc.name, r)
		}
		if strings.Contains(r.stdout, "REAL ") {
			t.Errorf("%s: the user's real passwd home %s shows in the sandbox:\n%s", tc.name, it.realHome, r)
		}
		if !strings.Contains(r.stdout, "ROOT_ENTRY\n") {
			t.Errorf("%s: the sandbox's /etc/passwd lost its other entries:\n%s", tc.name, r)
		}
		if strings.Contains(r.stdout, "WROTE_PASSWD") {
			t.Errorf("%s: the sandbox wrote its /etc/passwd:\n%s", tc.name, r)
		}
	}
	if after, err := os.ReadFile("/etc/passwd"); err != nil || !bytes.Equal(after, hostBefore) {
		t.Errorf("the host's /etc/passwd changed (%v)", err)
	}
}
