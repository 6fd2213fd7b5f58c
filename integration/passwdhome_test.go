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
// A third moves the command's HOME with env.set (`-e HOME=<project>/.home`): under
// bwrap the entry follows it, and ssh reads that home's config, not the sandbox
// home's; docker and krun keep docker.home as HOME (env.set HOME does not apply to
// them) and their entry names it.
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
[ "$HOME" = "$2" ] && echo MOVED
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
	// The moved home's own ssh config, which the sandbox could have written: ssh there
	// reads it, as every other program reads $HOME.
	moved := p.dir + "/.home"
	p.write("proj/.home/.ssh/config", "Host *\n  ProxyCommand /bin/false dsb-moved-home\n")
	for _, tc := range []struct {
		name  string
		env   []string
		flags []string
		moves bool // the command's HOME is the moved one
	}{
		{"suite HOME", nil, nil, false},
		{"another HOME, same state", []string{"HOME=" + home2}, nil, false},
		{"env.set HOME", nil, []string{"-e", "HOME=" + moved}, iso == "bwrap"},
	} {
		args := append(append([]string{"--isolator=" + iso, "--egress=proxy"}, tc.flags...), "--", "/bin/sh", "-c", script, "sh", it.realHome, moved)
		r := run(t, p.dir, tc.env, "", args...)
		if r.code != 0 {
			t.Fatalf("%s: the run failed:\n%s", tc.name, r)
		}
		home := regexp.MustCompile(`(?m)^HOME=(.*)$`).FindStringSubmatch(r.stdout)
		if home == nil || !strings.Contains(r.stdout, "PWHOME="+home[1]+"\n") {
			t.Errorf("%s: the user's passwd entry does not name the command's $HOME:\n%s", tc.name, r)
		}
		if got := strings.Contains(r.stdout, "MOVED\n"); got != tc.moves {
			t.Errorf("%s: the command's HOME is the env.set one: %v, want %v:\n%s", tc.name, got, tc.moves, r)
		}
		if tc.moves {
			if !strings.Contains(r.stdout, "SSHG proxycommand /bin/false dsb-moved-home\n") {
				t.Errorf("%s: ssh -G (no -F) did not read the config of the command's $HOME:\n%s", tc.name, r)
			}
		} else if !regexp.MustCompile(`(?m)^SSHG proxycommand .*--connect=`).MatchString(r.stdout) {
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
	// A HOME that is a host directory the view shows would have ssh read the host's
	// files there (a real home's .ssh, which hide_paths do not mask there) as its own.
	if r := run(t, p.dir, nil, "", "--isolator="+iso, "--egress=none", "-e", "HOME=/usr/share", "--", "true"); r.code != 125 || !strings.Contains(r.stderr, "env.set HOME") {
		t.Errorf("env.set HOME naming a host directory the sandbox sees: want 125 naming env.set HOME:\n%s", r)
	}
	if after, err := os.ReadFile("/etc/passwd"); err != nil || !bytes.Equal(after, hostBefore) {
		t.Errorf("the host's /etc/passwd changed (%v)", err)
	}
}

// TestSetHomeThroughPlantedLink: a sandbox plants <project>/home -> a host directory
// the view shows (here a read-only bind of the user's, holding an .ssh/config), and
// the next run moves HOME there (env.set HOME = "<project>/home"): the check on the
// moved HOME was by path, so the run started and ssh, through the passwd entry, took
// the host directory's .ssh/config for its own. The HOME is now followed through the
// links in the project, and the run refused (125) naming env.set HOME and the link.
// bwrap only: docker and krun set HOME to docker.home whatever env.set says.
func TestSetHomeThroughPlantedLink(t *testing.T) {
	requireBwrap(t)
	p := newProject(t)
	host, err := os.MkdirTemp("/var/tmp", "dsb-linkhome-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(host) })
	if err := os.MkdirAll(host+"/.ssh", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(host+"/.ssh/config", []byte("Host *\n  ProxyCommand /bin/false dsb-host-home\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(host, 0o755); err != nil {
		t.Fatal(err)
	}
	// The user's own, as ssh wants its config (root's shows as nobody inside).
	for _, f := range []string{host, host + "/.ssh", host + "/.ssh/config"} {
		if err := os.Lchown(f, it.uid, it.gid); err != nil {
			t.Fatal(err)
		}
	}
	bind := []string{"--mount", host + ":ro"}
	p.mustSandbox("bwrap", append(bind, "--egress=none"), `ln -s `+host+` "$PWD/home"`)
	args := append(append([]string{"--isolator=bwrap", "--egress=none"}, bind...), "-e", "HOME="+p.dir+"/home",
		"--", "/bin/sh", "-c", `ssh -G dsb-link.test 2>&1 | grep -i '^proxycommand'; echo ran`)
	r := run(t, p.dir, nil, "", args...)
	if r.code != 125 || !strings.Contains(r.stderr, "env.set HOME") || !strings.Contains(r.stderr, "the link "+p.dir+"/home,") || strings.Contains(r.stdout, "ran") {
		t.Fatalf("env.set HOME through a link the sandbox planted to %s: want exit 125 naming env.set HOME and the link, before the command; got:\n%s", host, r)
	}
}
