//go:build integration

package integration

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
)

// keptSession is a kept-container session started with its stdin held open: step
// writes one line to it (what the sandboxed command reads to take its next step).
type keptSession struct {
	*lineReader
	step func()
}

// startKept starts `devsandbox --isolator=iso flags -- sh -c script` in p with env.
func startKept(t *testing.T, p *project, iso string, flags, env []string, script string) keptSession {
	t.Helper()
	args := append([]string{"--isolator=" + iso}, flags...)
	args = append(args, "--", "/bin/sh", "-c", script)
	cmd := command(t.Context(), p.dir, baseEnv(env...), args...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	lr := startLines(t, cmd)
	t.Cleanup(func() { stdin.Close(); _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return keptSession{lr, func() { _, _ = io.WriteString(stdin, "\n") }}
}

// waitEnd waits for the output to end (the run has exited), failing after 30 s.
func (lr *lineReader) waitEnd() {
	lr.t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case _, ok := <-lr.lines:
			if !ok {
				return
			}
		case <-deadline:
			lr.t.Fatal("the run did not end within 30s")
		}
	}
}

// keeperLog is the log of the project's kept containers' keepers (why the proxy
// endpoint refused a connection).
func keeperLog(t *testing.T, iso string, p *project) string {
	t.Helper()
	var out []string
	for _, id := range projectContainers(t, iso, p, false) {
		b, _ := dockerCmd(iso, "logs", id).CombinedOutput()
		out = append(out, string(b))
	}
	return strings.Join(out, "\n")
}

// Two sessions of one kept container attached at the same time each have their own
// proxy and so their own audit log: every request a session makes, allowed or
// denied, is in its own session's log only, with the decision the policy made.
func TestKeptOverlappingSessionsAuditTheirOwn(t *testing.T) {
	requireRoot(t)
	o := newOutside(t)
	serveRecording(t, o, 8088, nil)
	forEachDocker(t, func(t *testing.T, iso string) {
		p := newProject(t)
		flags := []string{"--keep-container", "--egress=proxy", "--allow", o.addr + ":8088"}
		settle(p, iso, flags)
		tag := randHex(4)
		ask := func(name string) string {
			return fmt.Sprintf(`echo "got $(curl -s -o /dev/null -w '%%{http_code}' -m 10 http://%s:8088/%s-%s-allow) $(curl -s -o /dev/null -w '%%{http_code}' -m 10 http://%s:8089/%s-%s-deny)"`,
				o.addr, tag, name, o.addr, tag, name)
		}
		script := func(name string) string {
			return "echo up; read _; " + ask(name+"1") + "; read _; " + ask(name+"2")
		}
		a := startKept(t, p, iso, flags, nil, script("a"))
		a.waitFor("up")
		b := startKept(t, p, iso, flags, nil, script("b"))
		b.waitFor("up")
		// Both attached: A, B, B, A.
		for _, s := range []keptSession{a, b, b, a} {
			s.step()
			if got := s.waitFor("got "); got != "got 200 403" {
				t.Fatalf("a session's requests (allowed, denied): %q, want %q", got, "got 200 403")
			}
		}
		// A session's records reach the project's log as the engine relays them, so
		// one just answered may not be there yet; a session's run ends only once its
		// proxy's records are all written. Both have ended before the log is read.
		a.waitEnd()
		b.waitEnd()
		r := run(t, p.dir, nil, "", "logs", "proxy", "--json")
		if r.code != 0 {
			t.Fatalf("logs proxy:\n%s", r)
		}
		bySession := map[string][]string{}
		for _, rec := range parseAudit(t, r.stdout) {
			if strings.Contains(rec.Path, tag) {
				bySession[rec.Session] = append(bySession[rec.Session], rec.Decision+" "+rec.Path)
			}
		}
		want := func(name string) []string {
			var w []string
			for _, n := range []string{"1", "2"} {
				w = append(w, fmt.Sprintf("allow /%s-%s%s-allow", tag, name, n), fmt.Sprintf("deny /%s-%s%s-deny", tag, name, n))
			}
			sort.Strings(w)
			return w
		}
		var got [][]string
		for _, recs := range bySession {
			sort.Strings(recs)
			got = append(got, recs)
		}
		sort.Slice(got, func(i, j int) bool { return got[i][0] < got[j][0] })
		if len(got) != 2 || !slices.Equal(got[0], want("a")) || !slices.Equal(got[1], want("b")) {
			t.Fatalf("overlapping kept sessions' audit logs (by session):\n got %q\nwant %q and %q\n%s", got, want("a"), want("b"), r.stdout)
		}
	})
}

// undumpable is a client that makes itself non-dumpable (prctl(PR_SET_DUMPABLE, 0), as
// ssh and some runtimes do: its /proc/PID/fd is then closed to every process of the
// container) and then, for each line it reads, sends one request through the
// sandbox's proxy for the path its arguments name, printing "got STATUS".
const undumpable = `import ctypes, sys, urllib.request, urllib.error
if ctypes.CDLL(None).prctl(4, 0, 0, 0, 0) != 0:
    raise SystemExit("prctl")
print("up", flush=True)
for path in sys.argv[1:]:
    sys.stdin.readline()
    try:
        with urllib.request.urlopen(path, timeout=10) as r:
            print("got", r.status, flush=True)
    except urllib.error.HTTPError as e:
        print("got", e.code, flush=True)
`

// A non-dumpable client's proxy connection, made while another session of the kept
// container is attached, carries its own session's credential: the keeper cannot read
// the client's file descriptors, but it can see which session's processes it cannot
// read. It never carries the other session's: while both sessions have a process the
// keeper cannot read, the connection is refused (503).
func TestKeptUndumpableClientKeepsItsCredential(t *testing.T) {
	requireRoot(t)
	o := newOutside(t)
	_, auths := serveRecording(t, o, 8088, nil)
	forEachDocker(t, func(t *testing.T, iso string) {
		p, flags := keptCredentialProject(t, iso, o)
		p.write("proj/undumpable.py", undumpable)
		tokA, tokB := "ghp_ITA"+randHex(16), "ghp_ITB"+randHex(16)
		tag := randHex(4)
		url := func(name string) string { return fmt.Sprintf("http://%s:8088/%s-%s", o.addr, tag, name) }
		a := startKept(t, p, iso, flags, []string{"DSB_IT_TOKEN=" + tokA}, "exec python3 undumpable.py "+url("a1")+" "+url("a2"))
		a.waitFor("up")
		// B is attached, its processes readable: A's request is A's.
		b := startKept(t, p, iso, flags, []string{"DSB_IT_TOKEN=" + tokB}, "echo up; read _; exec python3 undumpable.py "+url("b1"))
		b.waitFor("up")
		a.step()
		if got := a.waitFor("got "); got != "got 200" {
			t.Fatalf("session A's non-dumpable request while B is attached: %q, want %q\n%s", got, "got 200", keeperLog(t, iso, p))
		}
		// B runs a non-dumpable process too: A's connection cannot be told, refused.
		b.step()
		b.waitFor("up")
		a.step()
		if got := a.waitFor("got "); got != "got 503" {
			t.Fatalf("session A's non-dumpable request while B has a non-dumpable process: %q, want %q", got, "got 503")
		}
		// A has ended: B's non-dumpable request is B's.
		a.waitEnd()
		b.step()
		if got := b.waitFor("got "); got != "got 200" {
			t.Fatalf("session B's non-dumpable request: %q, want %q", got, "got 200")
		}
		seen := slices.DeleteFunc(auths(), func(s string) bool { return !strings.HasPrefix(s, "/"+tag+"-") })
		want := []string{"/" + tag + "-a1 Bearer " + tokA, "/" + tag + "-b1 Bearer " + tokB}
		if !slices.Equal(seen, want) {
			t.Fatalf("non-dumpable clients of overlapping kept sessions:\n got %q\nwant %q", seen, want)
		}
		// The refused connection reached no proxy, but it is in the audit log of each
		// session it may have been: A's (whose it was) and B's (which the keeper could
		// not tell apart from A's).
		b.waitEnd()
		r := run(t, p.dir, nil, "", "logs", "proxy", "--json")
		if r.code != 0 {
			t.Fatalf("logs proxy:\n%s", r)
		}
		sessionOf := map[string]string{}
		var refused []string
		for _, rec := range parseAudit(t, r.stdout) {
			switch rec.Path {
			case "/" + tag + "-a1", "/" + tag + "-b1":
				sessionOf[rec.Path] = rec.Session
			case "/" + tag + "-a2":
				refused = append(refused, fmt.Sprintf("%s %s %s %s:%d %d %s", rec.Session, rec.Kind, rec.Method, rec.Host, rec.Port, rec.Status, rec.Decision))
			}
		}
		sa, sb := sessionOf["/"+tag+"-a1"], sessionOf["/"+tag+"-b1"]
		host := fmt.Sprintf("%s:8088", o.addr)
		wantRefused := []string{sa + " refused GET " + host + " 503 deny", sb + " refused GET " + host + " 503 deny"}
		sort.Strings(refused)
		sort.Strings(wantRefused)
		if sa == "" || sb == "" || sa == sb || !slices.Equal(refused, wantRefused) {
			t.Fatalf("the refused connection in the sessions' audit logs:\n got %q\nwant %q\n%s", refused, wantRefused, r.stdout)
		}
	})
}
