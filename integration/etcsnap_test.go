//go:build integration

package integration

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// etcState gives the project a devsandbox state directory of its own, so that its
// /etc snapshots are the test's alone: another devsandbox session of the test user
// (a helper's sandbox, another test) holds and builds snapshots under the user's
// default state directory, which prune must leave alone and which would change the
// snapshots' tree under the test. It returns the environment that selects it and
// where the snapshots are kept.
func (p *project) etcState() (env []string, snapshots string) {
	p.t.Helper()
	p.mkdir("state")
	state := p.path("state")
	return []string{"XDG_STATE_HOME=" + state}, filepath.Join(state, "devsandbox", "etc")
}

// treeSum hashes every name, mode and content under dir (links by target).
func treeSum(t *testing.T, dir string) string {
	t.Helper()
	h := sha256.New()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		h.Write([]byte(p + " " + fi.Mode().String() + "\n"))
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			l, _ := os.Readlink(p)
			h.Write([]byte(l))
		case fi.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			h.Write(b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// TestEtcSnapshotReadOnly: the sandbox's /etc is the snapshot, read-only as a whole
// and file by file; nothing in it can be written, renamed, replaced, removed or
// added, its mode cannot change, no descriptor of its host directory reaches the
// command, and the snapshot on the host is byte for byte what it was.
func TestEtcSnapshotReadOnly(t *testing.T) {
	requireBwrap(t)
	p := newProject(t)
	env, snaps := p.etcState()
	sandbox := func(script string) string {
		t.Helper()
		r := run(t, p.dir, env, "", "--isolator=bwrap", "--egress=none", "--", "/bin/sh", "-c", script)
		if r.code != 0 {
			t.Fatalf("sandboxed script failed:\n%s\n%s", script, r)
		}
		return r.stdout
	}
	sandbox("true") // the snapshot exists now
	before := treeSum(t, snaps)
	script := `
for f in /etc/passwd /etc/hosts /etc/resolv.conf /etc/ld.so.cache /etc/ld.so.conf.d/* /etc/ssl/openssl.cnf /etc/ssl/certs/ca-certificates.crt; do
  [ -f "$f" ] || continue
  ( echo x >> "$f" ) 2>/dev/null && echo "WROTE $f"
  chmod 666 "$f" 2>/dev/null && echo "CHMOD $f"
  mv "$f" "$f.moved" 2>/dev/null && echo "RENAMED $f"
  rm -f "$f" 2>/dev/null; [ -e "$f" ] || echo "REMOVED $f"
  ln -sf /tmp/evil "$f" 2>/dev/null && echo "REPLACED $f"
done
touch /etc/ld.so.preload 2>/dev/null && echo "CREATED /etc/ld.so.preload"
mkdir /etc/newdir 2>/dev/null && echo "MKDIR /etc/newdir"
chmod 777 /etc 2>/dev/null && echo "CHMOD /etc"
mv /etc/ssl /etc/ssl.moved 2>/dev/null && echo "RENAMED /etc/ssl"
rmdir /etc/ssl 2>/dev/null && echo "RMDIR /etc/ssl"
ln -s /tmp /etc/newlink 2>/dev/null && echo "LINKED /etc/newlink"
touch /etc/ssl/certs/new.pem 2>/dev/null && echo "CREATED in /etc/ssl/certs"
if [ -d /etc/ssl/private ]; then
  chmod 755 /etc/ssl/private 2>/dev/null && echo "CHMOD /etc/ssl/private"
  ls /etc/ssl/private >/dev/null 2>&1 && echo "LISTED /etc/ssl/private"
fi
for l in /etc/alternatives/awk /etc/ssl/certs/*.0; do
  [ -L "$l" ] || continue
  ln -sfn /tmp/evil "$l" 2>/dev/null && echo "RELINKED $l"
  rm -f "$l" 2>/dev/null; [ -L "$l" ] || echo "REMOVED $l"
  break
done
rm -rf /etc/java-17-openjdk/security 2>/dev/null; [ -d /etc/java-17-openjdk ] && ! [ -d /etc/java-17-openjdk/security ] && echo "REMOVED java security"
umount /etc 2>/dev/null && echo "UNMOUNTED /etc"
mount -o remount,rw /etc 2>/dev/null && echo "REMOUNTED /etc"
: > /tmp/probe
( echo x > /etc/probe ) 2>&1 | grep -q 'Read-only file system' || echo "NOT EROFS"
grep -q "^` + it.name + `:" /etc/passwd || echo "NO USER"
echo done
` + fdProbe
	out := sandbox(script)
	if report, _, _ := strings.Cut(out, "fd-shell "); strings.TrimSpace(report) != "done" {
		t.Errorf("the sandbox changed or reached its /etc snapshot:\n%s", out)
	}
	if fds := parseFDProbe(t, out); len(fds.dirs) > 0 {
		t.Errorf("directory descriptors reach the command: %v\n%s", fds.dirs, out)
	}
	if after := treeSum(t, snaps); after != before {
		t.Errorf("the snapshots on the host changed during the run")
	}
}

// inMountNS runs devsandbox in a private mount namespace of its own in which each
// file of binds is bound over the host path it names: the test changes what "the
// host" has at /etc/hosts without touching the machine's own.
func inMountNS(t *testing.T, dir string, binds map[string]string, args ...string) result {
	t.Helper()
	return inMountNSEnv(t, dir, nil, binds, args...)
}

// inMountNSEnv is inMountNS with env added to devsandbox's environment.
func inMountNSEnv(t *testing.T, dir string, env []string, binds map[string]string, args ...string) result {
	t.Helper()
	if !it.asOther {
		t.Skip("needs root: binds test files over /etc in a mount namespace of its own")
	}
	var sh strings.Builder
	for host, src := range binds {
		sh.WriteString("mount --bind " + strconv.Quote(src) + " " + strconv.Quote(host) + " || exit 99; ")
	}
	sh.WriteString(`exec setpriv --reuid=` + strconv.Itoa(it.uid) + ` --regid=` + strconv.Itoa(it.gid) + ` --init-groups "$@"`)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	argv := append([]string{"--mount", "--propagation", "private", "--", "/bin/sh", "-c", sh.String(), "sh", it.bin}, args...)
	cmd := exec.CommandContext(ctx, "unshare", argv...)
	cmd.Dir = dir
	cmd.Env = baseEnv(env...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	code := 0
	if err := cmd.Run(); err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatal(err)
		}
		code = ee.ExitCode()
	}
	return result{o.String(), e.String(), code}
}

// TestEtcSnapshotSeesHostChanges: a host file that changes between runs is seen
// changed in the next run; no run sees a stale /etc/hosts. Through the snapshot: the
// host's /etc/hosts replaced by other files (old ones, so the snapshot is keyed and
// used, which the --debug output shows), and back. Rewritten in place just now: the
// file is too fresh to key, and is copied this once.
func TestEtcSnapshotSeesHostChanges(t *testing.T) {
	requireBwrap(t)
	p := newProject(t)
	look := func(bound string, snapshot bool) {
		t.Helper()
		want, err := os.ReadFile(bound)
		if err != nil {
			t.Fatal(err)
		}
		r := inMountNS(t, p.dir, map[string]string{"/etc/hosts": bound}, "--debug", "--isolator=bwrap", "--egress=none", "--", "cat", "/etc/hosts")
		if r.code != 0 {
			t.Fatalf("run failed:\n%s", r)
		}
		if r.stdout != string(want) {
			t.Errorf("with %s as the host's /etc/hosts, the sandbox's is stale:\n%s", bound, r)
		}
		if copied := strings.Contains(r.stderr, "snapshot is not used"); copied == snapshot {
			t.Errorf("with %s: snapshot used %v, want %v:\n%s", bound, !copied, snapshot, r.stderr)
		}
	}
	look("/etc/shells", true)
	look("/etc/host.conf", true)
	look("/etc/shells", true) // the first snapshot again

	d := t.TempDir()
	if err := os.Chmod(d, 0o755); err != nil {
		t.Fatal(err)
	}
	fresh := filepath.Join(d, "hosts")
	for _, name := range []string{"first", "other"} { // in place, the same size
		if err := os.WriteFile(fresh, []byte("127.0.0.1 localhost\n10.231.9.1 "+name+".test\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		setAhead(t, fresh)
		look(fresh, false)
	}
}

// setAhead sets path's modification time an hour ahead, so that it is within the
// racy window (2 s) whenever a launch reads its clock: a file just written is only
// until then, and a launch on a loaded machine can read it more than 2 s after the
// write, and then rightly keys the file (seen: "snapshot used true, want false" with
// the launch 2.1 s after the write). A time ahead of the clock is as racy as one just
// past (etcsnap's racy), and the write itself stays the change the run must see.
func setAhead(t *testing.T, path string) {
	t.Helper()
	ahead := time.Now().Add(time.Hour)
	if err := os.Chtimes(path, ahead, ahead); err != nil {
		t.Fatal(err)
	}
}

// TestEtcSnapshotPrune: `sandboxes prune` keeps the newest snapshots and never one a
// running sandbox holds (its /etc stays whole); --dry-run removes nothing; the next
// run rebuilds what was pruned.
func TestEtcSnapshotPrune(t *testing.T) {
	requireBwrap(t)
	p := newProject(t)
	env, snaps := p.etcState()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := command(ctx, p.dir, baseEnv(env...), "--isolator=bwrap", "--egress=none", "--",
		"/bin/sh", "-c", `awk '$5 == "/etc" { print "root " $4 }' /proc/self/mountinfo; echo ready; read x; head -c 5 /etc/passwd; echo; ls /etc/ld.so.conf.d | wc -l`)
	lr, release := started(t, cmd)
	held := filepath.Base(strings.TrimPrefix(lr.waitFor("root "), "root "))
	lr.waitFor("ready")
	if !slices.Contains(snapshotNames(t, snaps), held) {
		t.Fatalf("the sandbox's /etc is %s, not a snapshot in %s", held, snaps)
	}
	// Newer snapshots of other host states, as other runs would have left them.
	for i := 0; i < etcKeep+1; i++ {
		d := filepath.Join(snaps, strings.Repeat(strconv.Itoa(i), 32))
		if err := os.Mkdir(d, 0o555); err != nil {
			t.Fatal(err)
		}
		if err := os.Lchown(d, it.uid, it.gid); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Remove(d) })
	}
	before := snapshotNames(t, snaps)
	if r := run(t, p.dir, env, "", "sandboxes", "prune", "--dry-run"); r.code != 0 || !reflect.DeepEqual(snapshotNames(t, snaps), before) {
		t.Fatalf("prune --dry-run changed %v to %v:\n%s", before, snapshotNames(t, snaps), r)
	}
	r := run(t, p.dir, env, "", "--config", p.noPodmanConfig(), "sandboxes", "prune")
	if r.code != 0 {
		t.Fatalf("prune:\n%s", r)
	}
	after := snapshotNames(t, snaps)
	oldest := strings.Repeat("0", 32) // the oldest planted one: beyond the newest etcKeep
	if !slices.Contains(after, held) || slices.Contains(after, oldest) || len(after) >= len(before) {
		t.Errorf("after prune: %v (before %v); want the held %s kept and %s removed", after, before, held, oldest)
	}
	release()
	if got := lr.next(); got != "root:" {
		t.Errorf("the held sandbox's /etc/passwd after prune starts with %q", got)
	}
	if got := lr.next(); got == "0" || got == "" {
		t.Errorf("the held sandbox's /etc/ld.so.conf.d after prune holds %q files", got)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	// Now that no run holds it, the oldest goes; the next run builds its own again.
	if r := run(t, p.dir, env, "", "--config", p.noPodmanConfig(), "sandboxes", "prune"); r.code != 0 || slices.Contains(snapshotNames(t, snaps), held) {
		t.Errorf("prune after the run: %v\n%s", snapshotNames(t, snaps), r)
	}
	if r := run(t, p.dir, env, "", "--isolator=bwrap", "--egress=none", "--", "head", "-c", "5", "/etc/passwd"); r.code != 0 || r.stdout != "root:" {
		t.Errorf("a run after prune sees /etc/passwd starting with %q:\n%s", r.stdout, r)
	}
	if names := snapshotNames(t, snaps); !slices.Contains(names, held) {
		t.Errorf("the run after prune did not build the host's snapshot %s again: %v", held, names)
	}
}

// etcKeep is how many snapshots prune keeps (etcsnap.Keep).
const etcKeep = 3

// snapshotNames lists the snapshot root dir.
func snapshotNames(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}
