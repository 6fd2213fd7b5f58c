//go:build integration

package integration

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// plantIPC leaves one of each kind of inter-process object a later session could
// find: a /dev/shm file, a POSIX message queue, and a System V shared memory
// segment, semaphore set and message queue under a well-known key.
const plantIPC = `set -e
echo planted > /dev/shm/dsb-plant
: > /dev/mqueue/dsb-plant
python3 - <<'EOF'
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
key = 0x0d5b1a7e
for name, call, args in (("shm", libc.shmget, (key, 4096, 0o1666)), ("sem", libc.semget, (key, 1, 0o1666)), ("msg", libc.msgget, (key, 0o1666))):
    if call(*args) < 0:
        raise SystemExit("%s: errno %d" % (name, ctypes.get_errno()))
EOF
echo planted-all`

// listIPC prints what plantIPC left, one line per object found.
const listIPC = `ls -A /dev/shm | sed 's/^/shm-file /'
ls -A /dev/mqueue | sed 's/^/mqueue /'
for k in shm sem msg; do tail -n +2 /proc/sysvipc/$k | awk -v k=$k '{print "sysv-" k, $1}'; done
echo listed`

// A kept container outlives its sessions, and so did its /dev/shm, its POSIX message
// queues and its System V IPC objects: an earlier session (another command, another
// environment) could leave a segment under a well-known key for a later session's
// tool to attach to, or data for it to read. The keeper clears them whenever no
// session is live, as it clears /run/secrets.
func TestKeptIPCDoesNotOutliveTheSession(t *testing.T) {
	forEachDocker(t, func(t *testing.T, iso string) {
		p := newProject(t)
		keep := []string{"--keep-container", "--egress=none"}
		settle(p, iso, keep)
		if out := p.mustSandbox(iso, keep, plantIPC+"\n"+listIPC); !strings.Contains(out, "planted-all") ||
			!strings.Contains(out, "shm-file dsb-plant") || !strings.Contains(out, "mqueue dsb-plant") || !strings.Contains(out, "sysv-shm 224074366") {
			t.Fatalf("the first session did not plant its objects:\n%s", out)
		}
		out := p.mustSandbox(iso, keep, listIPC)
		var left []string
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			if l != "listed" {
				left = append(left, l)
			}
		}
		if len(left) > 0 {
			t.Fatalf("a later session of the kept container found what an ended session left in its IPC:\n%s", out)
		}
	})
}

// Two sessions of one kept container attached at the same time, each given another
// value for the same proxy credential (the policy names the credential's source, not
// its value, so they share the container): each session's requests must carry its own
// value. Before, the keeper sent every connection to the newest session's proxy, so the
// older session's requests carried the newer one's token (and were audited in its log).
func TestKeptOverlappingSessionsKeepTheirCredentials(t *testing.T) {
	requireRoot(t)
	o := newOutside(t)
	_, auths := serveRecording(t, o, 8088, nil)
	forEachDocker(t, func(t *testing.T, iso string) {
		p, flags := keptCredentialProject(t, iso, o)
		tokA, tokB := "ghp_ITA"+randHex(16), "ghp_ITB"+randHex(16)
		tag := randHex(4)
		session := func(name, token string) (*lineReader, func()) {
			args := append([]string{"--isolator=" + iso}, flags...)
			args = append(args, "--", "/bin/sh", "-c", fmt.Sprintf(`echo up; read _; echo "got $(curl -s -m 10 -x "$HTTP_PROXY" http://%s:8088/%s-%s)"`, o.addr, tag, name))
			return started(t, command(t.Context(), p.dir, baseEnv("DSB_IT_TOKEN="+token), args...))
		}
		a, releaseA := session("a", tokA)
		a.waitFor("up")
		b, releaseB := session("b", tokB)
		b.waitFor("up")
		// Both attached: A asks first, then B.
		releaseA()
		if got := a.waitFor("got "); got != "got ok" {
			t.Fatalf("session A's request: %q", got)
		}
		releaseB()
		if got := b.waitFor("got "); got != "got ok" {
			t.Fatalf("session B's request: %q", got)
		}
		seen := slices.DeleteFunc(auths(), func(s string) bool { return !strings.HasPrefix(s, "/"+tag+"-") })
		want := []string{"/" + tag + "-a Bearer " + tokA, "/" + tag + "-b Bearer " + tokB}
		if !slices.Equal(seen, want) {
			t.Fatalf("overlapping kept sessions' requests carried another session's credential:\n got %q\nwant %q", seen, want)
		}
	})
}

// keptCredentialProject is a project whose kept container (docker variant iso) runs
// under --egress=proxy with a credential for o's port 8088 from DSB_IT_TOKEN (the
// session's own value), settled; flags are its runs' flags.
func keptCredentialProject(t *testing.T, iso string, o *outside) (*project, []string) {
	t.Helper()
	p := newProject(t)
	cfg := p.writeConfig(iso, "cred.toml", fmt.Sprintf(`[[proxy.credentials]]
host = "http://%s:8088"
header = "Authorization"
value_env = "DSB_IT_TOKEN"
format = "Bearer {}"
`, o.addr))
	flags := []string{"--keep-container", "--egress=proxy", "--allow", o.addr, "--config=" + cfg}
	settle(p, iso, flags)
	return p, flags
}
