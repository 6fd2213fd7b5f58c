//go:build integration

package integration

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// sshHost is a real sshd on an outside host (a test network namespace), serving one
// bare repository, repo.git, to the test user, plus a throwaway ssh-agent on the
// host holding the one key the sshd accepts. sshd runs as the test user, not root:
// on a high port, with `UsePAM no` (PAM needs root) it logs in only its own user,
// which is all a git remote needs. Options for OpenSSH 9.2 (Debian 12):
// `StrictModes no`, since its files sit in a scratch directory whose parents sshd
// does not judge as a home; `PidFile none`, since an unprivileged sshd cannot write
// /run/sshd.pid. Nothing here is the machine's: no system sshd, no host key or user
// key of the machine, no agent of the machine.
type sshHost struct {
	addr, port string // where sshd listens, in the outside namespace
	bare       string // the served bare repository
	hostFP     string // SHA256 fingerprint of sshd's throwaway host key
	knownHosts string // a known_hosts line for sshd
	keyPats    string // lines of the private key's body, one a line: what a scan looks for
	agentSock  string // the host agent's socket
	agentLog   string // the host agent's debug log (ssh-agent -d)
	sshdLog    string
	asUser     func(ctx context.Context, name string, args ...string) *exec.Cmd
}

// requireSSHD skips on a machine without OpenSSH's server, and fails in CI.
func requireSSHD(t *testing.T) {
	t.Helper()
	for _, p := range []string{"/usr/sbin/sshd", "ssh-agent", "ssh-keygen"} {
		if _, err := exec.LookPath(p); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("%s is required in CI (scripts/setup-test-env.sh installs openssh-server): %v", p, err)
			}
			t.Skipf("%s not installed", p)
		}
	}
}

func newSSHHost(t *testing.T, o *outside) *sshHost {
	t.Helper()
	requireSSHD(t)
	if !it.asOther { // newOutside needs root; sshd and the agent drop to the test user
		t.Fatal("the ssh login test runs as root, with a test user to log in as")
	}
	dir := filepath.Join(it.home, "sshd-"+randHex(4))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chown(dir, it.uid, it.gid); err != nil {
		t.Fatal(err)
	}
	h := &sshHost{addr: o.addr, port: "2222", bare: filepath.Join(dir, "repo.git"),
		agentSock: filepath.Join(dir, "agent.sock"), agentLog: filepath.Join(dir, "agent.log"), sshdLog: filepath.Join(dir, "sshd.log")}
	h.asUser = func(ctx context.Context, name string, args ...string) *exec.Cmd {
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Env = baseEnv("SSH_AUTH_SOCK="+h.agentSock, "GIT_CONFIG_NOSYSTEM=1")
		cmd.Dir = dir
		cmd.SysProcAttr = &syscall.SysProcAttr{}
		if it.asOther {
			cmd.SysProcAttr.Credential = &syscall.Credential{Uid: uint32(it.uid), Gid: uint32(it.gid), Groups: it.groups}
		}
		return cmd
	}
	ctx := t.Context()
	must := func(name string, args ...string) string {
		t.Helper()
		out, err := h.asUser(ctx, name, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("%s %q: %v\n%s", name, args, err, out)
		}
		return string(out)
	}
	must("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "DSB-IT-HOSTKEY", "-f", filepath.Join(dir, "hostkey"))
	must("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "DSB-IT-LOGINKEY", "-f", filepath.Join(dir, "loginkey"))
	h.hostFP = strings.Fields(must("ssh-keygen", "-l", "-f", filepath.Join(dir, "hostkey.pub")))[1]
	pub, err := os.ReadFile(filepath.Join(dir, "hostkey.pub"))
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(pub))
	h.knownHosts = fmt.Sprintf("[%s]:%s %s %s\n", h.addr, h.port, f[0], f[1])
	h.keyPats = keyPatterns(t, filepath.Join(dir, "loginkey"))

	must("git", "init", "-q", "--bare", "-b", "main", h.bare)
	must("git", "init", "-q", "-b", "main", filepath.Join(dir, "seed"))
	must("git", "-C", filepath.Join(dir, "seed"), "-c", "user.name=t", "-c", "user.email=t@t.test", "commit", "-q", "--allow-empty", "-m", "seed")
	must("git", "-C", filepath.Join(dir, "seed"), "push", "-q", h.bare, "main")

	cfg := filepath.Join(dir, "sshd_config")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`ListenAddress %s:%s
HostKey %s
AuthorizedKeysFile %s
AuthenticationMethods publickey
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
PidFile none
`, h.addr, h.port, filepath.Join(dir, "hostkey"), filepath.Join(dir, "loginkey.pub"))), 0o644); err != nil {
		t.Fatal(err)
	}
	h.start(t, "sshd", h.sshdLog, "ip", "netns", "exec", o.ns, "setpriv", "--reuid="+strconv.Itoa(it.uid), "--regid="+strconv.Itoa(it.gid),
		"--clear-groups", "/usr/sbin/sshd", "-D", "-e", "-f", cfg)
	h.start(t, "ssh-agent", h.agentLog, "setpriv", "--reuid="+strconv.Itoa(it.uid), "--regid="+strconv.Itoa(it.gid),
		"--clear-groups", "ssh-agent", "-d", "-a", h.agentSock)
	for deadline := time.Now().Add(10 * time.Second); ; runtimeYield() {
		_, serr := os.Stat(h.agentSock)
		c, derr := net.DialTimeout("tcp", net.JoinHostPort(h.addr, h.port), time.Second)
		if derr == nil {
			c.Close()
		}
		if serr == nil && derr == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("sshd (%v) or ssh-agent (%v) not serving after 10s\n%s", derr, serr, h.logs())
		}
	}
	must("ssh-add", filepath.Join(dir, "loginkey"))
	return h
}

// start runs argv as root (it drops to the test user itself) until the test ends, its
// output in log.
func (h *sshHost) start(t *testing.T, what, log string, argv ...string) {
	t.Helper()
	f, err := os.Create(log)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", what, err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
}

func (h *sshHost) logs() string {
	s, _ := os.ReadFile(h.sshdLog)
	a, _ := os.ReadFile(h.agentLog)
	tail := func(b []byte) string { // the agent's debug log is long
		l := strings.Split(string(b), "\n")
		return strings.Join(l[max(0, len(l)-40):], "\n")
	}
	return "sshd:\n" + tail(s) + "\nssh-agent:\n" + tail(a)
}

// keyPatterns returns the lines of the private key file's base64 body that hold
// the key itself: not the first (the same in every unencrypted ed25519 key) and
// none too short to stand for the key alone.
func keyPatterns(t *testing.T, key string) string {
	t.Helper()
	b, err := os.ReadFile(key)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := os.ReadFile(key + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	var pats []string
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	for i, l := range lines {
		if i >= 2 && i < len(lines)-1 && len(l) >= 40 {
			if strings.Contains(string(pub), l) {
				t.Fatalf("a private key line is in the public key: %s", key)
			}
			pats = append(pats, l)
		}
	}
	if len(pats) < 2 {
		t.Fatalf("the private key %s has %d body lines to look for, want 2 or more", key, len(pats))
	}
	return strings.Join(pats, "\n") + "\n"
}

// agentKeys lists the host agent's keys.
func (h *sshHost) agentKeys(t *testing.T) string {
	t.Helper()
	out, err := h.asUser(t.Context(), "ssh-add", "-L").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "DSB-IT-LOGINKEY") {
		t.Fatalf("ssh-add -L on the host: %v\n%s", err, out)
	}
	return string(out)
}

// TestSSHLoginThroughAgent: what a user forwards the agent for, on every isolator. A
// real ssh in the sandbox logs in to a real sshd on an outside host (in the default
// egress mode, proxy, through the ProxyCommand of the ~/.ssh/config the ssh tool
// writes, the address allowed) with a key only the host's agent holds, signing through the
// run's filtering relay, session-bind@openssh.com included (the host agent records
// the binding to sshd's host key); real git clones from it over ssh and pushes a new
// commit, which lands in the served repository. The sandbox still cannot remove the
// agent's keys (ssh-add -D fails; the host agent holds the key after), and the
// private key is nowhere in its view: not in its environment, not in a file under
// its home or /tmp. With the ssh tool disabled (egress allowlist: directly), the same
// login reaches sshd and fails for want of a key. One sshd and one agent serve every
// isolator.
func TestSSHLoginThroughAgent(t *testing.T) {
	o := newOutside(t)
	h := newSSHHost(t, o)
	forEachIsolator(t, func(t *testing.T, iso string) { testSSHLoginThroughAgent(t, iso, h) })
}

func testSSHLoginThroughAgent(t *testing.T, iso string, h *sshHost) {
	p := newProject(t)
	id := strings.TrimPrefix(p.name(), filepath.Base(p.dir)+"-")
	t.Cleanup(func() { os.RemoveAll(filepath.Join(runtimeDir(), "devsandbox", id)) })
	p.write("proj/known_hosts", h.knownHosts)
	keysBefore := h.agentKeys(t)
	logBefore, _ := os.ReadFile(h.agentLog)

	direct := "ssh -o BatchMode=yes -o ConnectTimeout=10 -o StrictHostKeyChecking=yes -o UserKnownHostsFile=" + filepath.Join(p.dir, "known_hosts")
	// No -F: ssh reads ~ from the passwd entry, not $HOME, and the sandbox's entry
	// names its $HOME even where the suite's throwaway HOME is not the user's home
	// (TestPasswdHomeIsSandboxHome), so ssh finds the ~/.ssh/config the ssh tool
	// writes (its ProxyCommand reaches the proxy).
	ssh := direct
	// The key's lines arrive on stdin, read into a variable of this shell (in no
	// argv, no environment, no file); the scans take them from a here-document.
	script := fmt.Sprintf(`P=$(cat)
%[1]s -p %[2]s %[3]s@%[4]s true && echo LOGIN
export GIT_SSH_COMMAND='%[1]s'
(cd /tmp && git clone -q ssh://%[3]s@%[4]s:%[2]s%[5]s w && cd w &&
	git -c user.name=t -c user.email=t@t.test commit -q --allow-empty -m from-sandbox &&
	git push -q origin HEAD:refs/heads/from-%[6]s && echo "PUSHED $(git rev-parse HEAD)")
ssh-add -D </dev/null >/dev/null 2>&1 && echo REMOVED_ALL
ssh-add -l | grep -q DSB-IT-LOGINKEY && echo STILL_LISTS
env | grep -qF -f /dev/fd/3 3<<EOF && echo KEY_IN_ENV
$P
EOF
grep -rlsF -D skip -f /dev/fd/3 "$HOME" /tmp 3<<EOF | sed 's/^/KEY_IN_FILE /'
$P
EOF
test -d "$HOME" && test -d /tmp/w && echo SCANNED
true`, ssh, h.port, it.name, h.addr, h.bare, iso)
	env := []string{"SSH_AUTH_SOCK=" + h.agentSock, "XDG_RUNTIME_DIR=" + runtimeDir()}
	allow := []string{"--isolator=" + iso, "--allow", net.JoinHostPort(h.addr, h.port)}
	start := time.Now()
	// The default egress mode: ssh connects through the proxy (the ProxyCommand of
	// the ~/.ssh/config the ssh tool writes), which allows the one address.
	r := run(t, p.dir, env, h.keyPats, append(allow, "--egress=proxy", "--", "/bin/sh", "-c", script)...)
	t.Logf("%s: login, clone, push and scans in %v", iso, time.Since(start).Round(time.Millisecond))
	if strings.Contains(r.stdout+r.stderr, strings.SplitN(h.keyPats, "\n", 2)[0]) {
		t.Error("the run's output holds the private key")
	}
	for _, bad := range []string{"REMOVED_ALL", "KEY_IN_ENV", "KEY_IN_FILE"} {
		if strings.Contains(r.stdout, bad) {
			t.Errorf("the sandbox removed the agent's keys or holds the private key (%s):\n%s", bad, r)
		}
	}
	pushed := regexp.MustCompile(`(?m)^PUSHED ([0-9a-f]{40})$`).FindStringSubmatch(r.stdout)
	if r.code != 0 || !strings.Contains(r.stdout, "LOGIN\n") || pushed == nil || !strings.Contains(r.stdout, "STILL_LISTS\n") || !strings.Contains(r.stdout, "SCANNED\n") {
		t.Fatalf("want the ssh login, the clone and push, the keys listed after ssh-add -D and the scans done:\n%s\n%s", r, h.logs())
	}
	out, err := exec.Command("git", "--git-dir", h.bare, "rev-parse", "refs/heads/from-"+iso).Output()
	if err != nil || strings.TrimSpace(string(out)) != pushed[1] {
		t.Errorf("the served repository's from-%s: %q (%v), want the pushed commit %s", iso, out, err, pushed[1])
	}
	if after := h.agentKeys(t); after != keysBefore {
		t.Errorf("the host agent's keys changed: before\n%safter\n%s", keysBefore, after)
	}
	// ssh bound each session to sshd's host key through the relay: the agent
	// recorded it (OpenSSH's client only logs a refused binding at -vv and logs in
	// anyway, so the login alone does not show it).
	logAfter, _ := os.ReadFile(h.agentLog)
	if bound := "process_ext_session_bind: recorded ED25519 " + h.hostFP; !strings.Contains(string(logAfter[len(logBefore):]), bound) {
		t.Errorf("the host agent recorded no session-bind to sshd's host key (%q) during the run:\n%s", bound, logAfter[len(logBefore):])
	}

	// The agent is there on the host, but not forwarded: the same login fails, at
	// the server (allowlist mode connects directly, without the ssh tool's config).
	cfg := p.writeConfig(iso, "nossh.toml", "[tools.ssh]\nenabled = false\n")
	r = run(t, p.dir, env, "", append(allow, "--egress=allowlist", "--config="+cfg, "--", "/bin/sh", "-c",
		fmt.Sprintf(`%s -p %s %s@%s true 2>&1; echo "rc=$?"`, direct, h.port, it.name, h.addr))...)
	if r.code != 0 || !strings.Contains(r.stdout, "Permission denied (publickey)") || !strings.HasSuffix(r.stdout, "rc=255\n") {
		t.Errorf("without the ssh tool: want the login refused for want of a key (exit 255):\n%s", r)
	}
}
