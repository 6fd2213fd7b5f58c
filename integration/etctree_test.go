//go:build integration

package integration

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// treeListing prints, for each path under its arguments, what the user sees: its
// kind, whether it can be read and entered or executed, and a link's target or a
// readable file's checksum. Paths the user cannot reach are not listed.
const treeListing = `find "$@" -printf '%y %p\n' 2>/dev/null | LC_ALL=C sort -k2 | while read -r y p; do
  a=; [ -r "$p" ] && a=r; [ -x "$p" ] && a=${a}x
  case $y in
  l) echo "$p link $(readlink "$p")";;
  f) s=-; [ -r "$p" ] && s=$(cksum < "$p"); echo "$p file $a $s";;
  d) echo "$p dir $a";;
  *) echo "$p other $y";;
  esac
done`

// asTestUser runs sh -c script with args on the host as the test user.
func asTestUser(t *testing.T, script string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/bin/sh", append([]string{"-c", script, "sh"}, args...)...)
	cmd.Env = baseEnv()
	if it.asOther {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(it.uid), Gid: uint32(it.gid), Groups: it.groups}}
	}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v", script, err)
	}
	return string(out)
}

// etcTrees are the /etc directories the default view shows that hold more than
// regular files (the planner copies those file by file): the snapshot copies them
// whole.
func etcTrees(t *testing.T) []string {
	var dirs []string
	for _, d := range []string{"/etc/ssl", "/etc/alternatives", "/etc/pki", "/etc/crypto-policies", "/etc/java-17-openjdk", "/etc/java-21-openjdk"} {
		if fi, err := os.Lstat(d); err == nil && fi.IsDir() {
			dirs = append(dirs, d)
		}
	}
	if len(dirs) == 0 {
		needOrSkip(t, "no /etc directory of the default view holds links or directories here (CI's Debian has /etc/ssl and /etc/alternatives)")
	}
	return dirs
}

// TestEtcTreesSameView: /etc/ssl, /etc/alternatives and the like, copied into the
// /etc snapshot instead of bound, look to the sandbox as they look to the user on
// the host: the same names, kinds, link targets, contents, and what can be read or
// entered (/etc/ssl/private: neither). No mount is left for them (nor any other in /etc:
// a generated /etc/passwd is the snapshot's), and TLS through
// the copied certificates and a program reached through /etc/alternatives work.
func TestEtcTreesSameView(t *testing.T) {
	requireBwrap(t)
	p := newProject(t)
	env, _ := p.etcState()
	dirs := etcTrees(t)
	want := asTestUser(t, treeListing, dirs...)
	args := append([]string{"--debug", "--isolator=bwrap", "--egress=none", "--", "/bin/sh", "-c", treeListing, "sh"}, dirs...)
	run(t, p.dir, env, "", args...) // builds the snapshot
	r := run(t, p.dir, env, "", args...)
	if r.code != 0 {
		t.Fatalf("listing in the sandbox:\n%s", r)
	}
	if r.stdout != want {
		t.Errorf("the sandbox's view of %v differs from the host's:\n%s", dirs, lineDiff(want, r.stdout))
	}
	if strings.Contains(r.stderr, "bound read-only over the snapshot") || strings.Contains(r.stderr, "snapshot is not used") {
		t.Errorf("a directory was bound, not copied:\n%s", r.stderr)
	}
	mounts := p.mustSandboxEnv(baseEnv(env...), []string{"--isolator=bwrap", "--egress=none"},
		`awk '$5 ~ "^/etc/" { print $5 }' /proc/self/mountinfo; awk 'BEGIN { print "awk runs" }'`)
	// Where the suite's HOME is not the user's passwd home, the entry naming the
	// sandbox's home is the snapshot's own /etc/passwd, not a bind over it
	// (TestPasswdHomeIsSandboxHome): no mount in /etc either way.
	want = "awk runs\n"
	if mounts != want {
		t.Errorf("mounts in /etc, or awk (through /etc/alternatives) failed:\n%s", mounts)
	}
}

// lineDiff shows the lines only in a and only in b.
func lineDiff(a, b string) string {
	in := func(s string) map[string]bool {
		m := map[string]bool{}
		for _, l := range strings.Split(s, "\n") {
			m[l] = true
		}
		return m
	}
	ina, inb := in(a), in(b)
	var out strings.Builder
	for _, l := range strings.Split(a, "\n") {
		if !inb[l] {
			out.WriteString("- " + l + "\n")
		}
	}
	for _, l := range strings.Split(b, "\n") {
		if !ina[l] {
			out.WriteString("+ " + l + "\n")
		}
	}
	return out.String()
}

// TestEtcTreeHostLinkNotFollowed: a link planted on the host in a copied /etc
// directory (/etc/ssl/evil -> a directory the user can read and the sandbox does not
// see) is copied as a link: what it points to is not copied, and does not resolve in
// the sandbox, as through a bind. The test's /etc/ssl is bound over the host's in a
// mount namespace of its own, and is older than the racy window so it is copied.
func TestEtcTreeHostLinkNotFollowed(t *testing.T) {
	requireBwrap(t)
	p := newProject(t)
	env, snaps := p.etcState()
	secret, err := os.MkdirTemp("/var/tmp", "dsb-secret-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(secret) })
	const content = "SECRET-not-for-the-sandbox-5e1f\n"
	ssl := filepath.Join(t.TempDir(), "ssl")
	for _, d := range []string{secret, ssl, ssl + "/certs"} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for path, data := range map[string]string{secret + "/key": content, ssl + "/certs/ca.pem": "pem\n"} {
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{ssl + "/evil": secret, ssl + "/certs/evil.pem": secret + "/key"} {
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
	}
	// Wait out the racy window (a directory changed within it makes the launch copy
	// the files one by one, with no snapshot): the condition is the clock itself.
	time.Sleep(2100 * time.Millisecond)
	r := inMountNSEnv(t, p.dir, env, map[string]string{"/etc/ssl": ssl}, "--debug", "--isolator=bwrap", "--egress=none", "--",
		"/bin/sh", "-c", `readlink /etc/ssl/evil /etc/ssl/certs/evil.pem; cat /etc/ssl/certs/ca.pem; if cat /etc/ssl/evil/key /etc/ssl/certs/evil.pem 2>/dev/null; then echo READ; fi`)
	if r.code != 0 {
		t.Fatalf("run failed:\n%s", r)
	}
	if want := secret + "\n" + secret + "/key\npem\n"; r.stdout != want {
		t.Errorf("the sandbox sees:\n%s\nwant:\n%s", r.stdout, want)
	}
	if strings.Contains(r.stderr, "/etc/ssl is bound") || strings.Contains(r.stderr, "snapshot is not used") {
		t.Fatalf("the planted /etc/ssl was bound, not copied: the test proves nothing\n%s", r.stderr)
	}
	err = filepath.Walk(snaps, func(path string, fi os.FileInfo, err error) error {
		if err != nil || !fi.Mode().IsRegular() {
			return err
		}
		if b, err := os.ReadFile(path); err == nil && strings.Contains(string(b), "SECRET-not-for-the-sandbox") {
			t.Errorf("%s holds the link target's content", path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestEtcTreeChangeSeenNextRun: a certificate updated in place in a copied /etc
// directory (update-ca-certificates) is seen by the very next run, which, the
// directory being changed within the racy window, uses no snapshot and builds none
// (the files are copied one by one, /etc/ssl bound); the first run after the window
// builds one snapshot with the new certificate, and the run after it reuses it.
// The test's /etc/ssl is bound over the host's in a mount namespace of its own.
func TestEtcTreeChangeSeenNextRun(t *testing.T) {
	requireBwrap(t)
	p := newProject(t)
	env, snaps := p.etcState()
	ssl := filepath.Join(t.TempDir(), "ssl")
	if err := os.MkdirAll(ssl+"/certs", 0o755); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{filepath.Dir(ssl), ssl} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	pem := ssl + "/certs/ca.pem"
	if err := os.WriteFile(pem, []byte("old CA\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	count := func() int {
		ents, _ := os.ReadDir(snaps)
		n := 0
		for _, e := range ents {
			if !strings.HasPrefix(e.Name(), ".") {
				n++
			}
		}
		return n
	}
	look := func(want string, built, snapshot bool) {
		t.Helper()
		r := inMountNSEnv(t, p.dir, env, map[string]string{"/etc/ssl": ssl}, "--debug", "--isolator=bwrap", "--egress=none", "--", "cat", "/etc/ssl/certs/ca.pem")
		if r.code != 0 || r.stdout != want {
			t.Fatalf("the sandbox's ca.pem: %q, want %q\n%s", r.stdout, want, r)
		}
		if got := strings.Contains(r.stderr, "was built for this launch"); got != built {
			t.Errorf("built a snapshot: %v, want %v\n%s", got, built, r.stderr)
		}
		if got := !strings.Contains(r.stderr, "snapshot is not used"); got != snapshot {
			t.Errorf("used a snapshot: %v, want %v\n%s", got, snapshot, r.stderr)
		}
	}
	// The condition is the clock itself: the directory older than the racy window.
	time.Sleep(2100 * time.Millisecond)
	look("old CA\n", true, true)
	before := count()
	if err := os.WriteFile(pem, []byte("new CA\n"), 0o644); err != nil { // in place
		t.Fatal(err)
	}
	wrote := time.Now()
	setAhead(t, pem) // in the racy window however late the launch reads its clock
	look("new CA\n", false, false)
	if n := count(); n != before {
		t.Errorf("the run in the racy window left %d snapshots, there were %d", n, before)
	}
	// Back to the write's time; the change of times itself (ctime) is then the last
	// change, which the wait below puts out of the racy window.
	if err := os.Chtimes(pem, wrote, wrote); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2100 * time.Millisecond)
	look("new CA\n", true, true)
	look("new CA\n", false, true)
}
