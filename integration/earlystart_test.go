//go:build integration

package integration

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// earlyEnv gives the project a state directory of its own (its launch records and
// session /tmp directories the test's alone) and asks for the early start whatever
// the machine's load.
func (p *project) earlyEnv(extra ...string) (env []string, state string) {
	p.t.Helper()
	p.mkdir("state")
	return append([]string{"XDG_STATE_HOME=" + p.path("state"), "DEVSANDBOX_EARLY_START=always"}, extra...),
		filepath.Join(p.path("state"), "devsandbox")
}

// records returns the launch records' files under state.
func records(t *testing.T, state string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(state, "prestart", "*"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// leftovers lists what a run left: session /tmp directories in the project's tmp/,
// and processes whose argv names the state directory (an early bwrap).
func leftovers(t *testing.T, state string) []string {
	t.Helper()
	var left []string
	tmps, _ := filepath.Glob(filepath.Join(state, "*", "tmp", "*"))
	left = append(left, tmps...)
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, c := range procs {
		b, err := os.ReadFile(c)
		if err == nil && strings.Contains(string(b), state) {
			if st, err := os.ReadFile(filepath.Join(filepath.Dir(c), "stat")); err == nil && !strings.Contains(string(st), ") Z ") {
				left = append(left, c+": "+strings.ReplaceAll(string(b), "\x00", " "))
			}
		}
	}
	return left
}

// TestEarlyStart: with DEVSANDBOX_EARLY_START, the first launch of a command line
// keeps a record (names, never the secret's value), the next one starts bwrap from
// it and uses it, and a launch whose plan changed (a new .env to mask) misses, runs
// as without it, and records anew; nothing is left behind.
func TestEarlyStart(t *testing.T) {
	requireBwrap(t)
	p := newProject(t)
	env, state := p.earlyEnv("EARLY_SECRET=s3cr3t-early-value")
	// A secret file too: small, as a generated file whose content a record keeps is.
	p.write("secret-file", "f1le-s3cr3t-early")
	args := []string{"--isolator=bwrap", "--egress=none", "--debug", "-e", "EARLY_SECRET",
		"--secret-file", "FILE_TOKEN=" + p.path("secret-file"),
		"--", "/bin/sh", "-c", `echo "out $EARLY_SECRET $(cat /run/secrets/FILE_TOKEN)"`}
	launch := func(want string) {
		t.Helper()
		r := run(t, p.dir, env, "", args...)
		if r.code != 0 || r.stdout != "out s3cr3t-early-value f1le-s3cr3t-early\n" {
			t.Fatalf("the launch failed:\n%s", r)
		}
		for _, v := range []string{"s3cr3t-early-value", "f1le-s3cr3t-early"} {
			if strings.Contains(r.stderr, v) {
				t.Errorf("the debug output holds a secret's value:\n%s", r.stderr)
			}
		}
		for _, w := range strings.Split(want, "|") {
			if !strings.Contains(r.stderr, "devsandbox: debug: early start: "+w) {
				t.Errorf("stderr lacks %q:\n%s", "early start: "+w, r.stderr)
			}
		}
	}
	launch("not made: no record of this launch")
	recs := records(t, state)
	if len(recs) != 1 {
		t.Fatalf("records %v, want one", recs)
	}
	b, err := os.ReadFile(recs[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"s3cr3t-early-value", "f1le-s3cr3t-early"} {
		// In the clear, and as a record keeps a content (base64).
		if strings.Contains(string(b), v) || strings.Contains(string(b), base64.StdEncoding.EncodeToString([]byte(v))) {
			t.Errorf("the record holds the secret's value %q:\n%s", v, b)
		}
	}
	launch("made|matched")
	launch("made|matched")
	p.write("proj/.env", "TOKEN=x\n")
	launch("made|missed: ")
	launch("made|matched")
	if left := leftovers(t, state); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}

// TestEarlyStartPlantedRecord: a record planted where devsandbox keeps this launch's
// (the file and directory checks pass: the test user's own, 0600) whose bwrap would
// truncate, chmod, and plant a link and a directory in a host directory before its
// block is refused before anything starts: the directory is as it was, the launch
// runs as without it, and the planted record is replaced.
func TestEarlyStartPlantedRecord(t *testing.T) {
	requireBwrap(t)
	p := newProject(t)
	env, state := p.earlyEnv()
	p.write("victim/.profile", "keep\n")
	p.write("victim/secret", "key\n")
	victim := p.path("victim")
	if err := os.Chmod(filepath.Join(victim, "secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"--isolator=bwrap", "--egress=none", "--debug", "--", "/bin/true"}
	if r := run(t, p.dir, env, "", args...); r.code != 0 {
		t.Fatalf("first launch:\n%s", r)
	}
	recs := records(t, state)
	if len(recs) != 1 {
		t.Fatalf("records %v, want one", recs)
	}
	good, err := os.ReadFile(recs[0])
	if err != nil {
		t.Fatal(err)
	}
	for name, ops := range map[string][]string{
		"--file truncates": {"--perms", "0444", "--file", "91", "/mnt/.profile"},
		"--chmod":          {"--chmod", "0777", "/mnt/secret"},
		"--symlink":        {"--symlink", "/etc/passwd", "/mnt/planted"},
		"--dir":            {"--dir", "/mnt/planted-dir"},
		"a mount point":    {"--tmpfs", "/mnt/planted-mount"},
	} {
		t.Run(name, func(t *testing.T) {
			var rec map[string]any
			if err := json.Unmarshal(good, &rec); err != nil {
				t.Fatal(err)
			}
			argv := toStrings(rec["Argv"].([]any))
			// First: bwrap does them before it waits on any of the record's pipes.
			argv = slices.Insert(argv, 1, append([]string{"--bind-fd", "90", "/mnt"}, ops...)...)
			rec["Argv"] = argv
			files := rec["Files"].([]any)
			files = append(files, map[string]any{"FD": 90, "Kind": "source", "Path": victim})
			if slices.Contains(ops, "--file") {
				files = append(files, map[string]any{"FD": 91, "Kind": "data"})
			}
			rec["Files"] = files
			forged, err := json.Marshal(rec)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(recs[0], forged, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chown(recs[0], it.uid, it.gid); err != nil {
				t.Fatal(err)
			}
			before := treeSum(t, victim)
			r := run(t, p.dir, env, "", args...)
			if r.code != 0 {
				t.Fatalf("the launch with a planted record failed:\n%s", r)
			}
			if !strings.Contains(r.stderr, "early start: not made: launch record refused") {
				t.Errorf("the planted record was not refused:\n%s", r.stderr)
			}
			if treeSum(t, victim) != before {
				t.Errorf("the planted record changed %s", victim)
			}
			now, err := os.ReadFile(recs[0])
			if err != nil || strings.Contains(string(now), victim) {
				t.Errorf("the planted record was kept (%v)", err)
			}
		})
	}
	if left := leftovers(t, state); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}

// TestEarlyStartPlantedContent: a record keeps the content of a generated file that
// holds no secret (the ssh client config), and the early start gives it to bwrap
// before the plan is made. A planted record whose content differs (a ProxyCommand of
// the forger's) passes Vet, and bwrap places it in the sandbox's tmpfs; the launch
// must miss, kill that bwrap, and run as without it: the command reads the fresh
// plan's content, never the planted one, and the record is replaced.
func TestEarlyStartPlantedContent(t *testing.T) {
	requireBwrap(t)
	p := newProject(t)
	env, state := p.earlyEnv()
	args := []string{"--isolator=bwrap", "--egress=none", "--debug", "--", "/bin/sh", "-c", `cat "$HOME/.ssh/config"`}
	first := run(t, p.dir, env, "", args...)
	if first.code != 0 {
		t.Fatalf("first launch:\n%s", first)
	}
	recs := records(t, state)
	if len(recs) != 1 {
		t.Fatalf("records %v, want one", recs)
	}
	good, err := os.ReadFile(recs[0])
	if err != nil {
		t.Fatal(err)
	}
	var rec map[string]any
	if err := json.Unmarshal(good, &rec); err != nil {
		t.Fatal(err)
	}
	files := rec["Files"].([]any)
	content := -1
	for i, f := range files {
		if f.(map[string]any)["Kind"] == "content" {
			content = i
		}
	}
	if content < 0 {
		needOrSkip(t, "the launch has no recorded generated file (ssh is not on PATH: no ~/.ssh/config is generated)")
	}
	if r := run(t, p.dir, env, "", args...); r.code != 0 || r.stdout != first.stdout || !strings.Contains(r.stderr, "early start: matched") {
		t.Fatalf("a launch from devsandbox's own record did not match, or read another content:\n%s", r)
	}
	const forged = "ProxyCommand /bin/sh -c 'echo planted-by-record'\n"
	files[content].(map[string]any)["Content"] = []byte(forged) // base64, as the record keeps it
	b, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(recs[0], b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(recs[0], it.uid, it.gid); err != nil {
		t.Fatal(err)
	}
	r := run(t, p.dir, env, "", args...)
	if r.code != 0 {
		t.Fatalf("the launch with a planted content failed:\n%s", r)
	}
	if strings.Contains(r.stdout, "planted-by-record") || r.stdout != first.stdout {
		t.Errorf("the sandbox read the planted content, not the fresh plan's:\n%s", r)
	}
	if !strings.Contains(r.stderr, "early start: made") || !strings.Contains(r.stderr, "content is not the fresh plan's") {
		t.Errorf("the planted content did not miss:\n%s", r.stderr)
	}
	if now, err := os.ReadFile(recs[0]); err != nil || strings.Contains(string(now), "planted-by-record") || string(now) != string(good) {
		t.Errorf("the planted record was not replaced by the launch's own (%v)", err)
	}
	if left := leftovers(t, state); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}

// TestEarlyStartPlaceholder: a credential's placeholder (proxy.credentials with a
// placeholder_env) is made fresh for each launch; the early start makes it before the
// plan, which takes it, so such a launch is used (it never was: the record names a
// variable no host has). Each launch's placeholder is new, and none is in the record.
func TestEarlyStartPlaceholder(t *testing.T) {
	requireBwrap(t)
	p := newProject(t)
	env, state := p.earlyEnv("DSB_IT_TOKEN=secret-token-value")
	cfg := p.writeConfig("bwrap", "cred.toml", `[proxy]
mitm = true
[[proxy.credentials]]
host = "api.example.test"
header = "Authorization"
value_env = "DSB_IT_TOKEN"
format = "Bearer {}"
placeholder_env = "DSB_IT_TOKEN"
`)
	args := []string{"--isolator=bwrap", "--egress=proxy", "--config", cfg, "--debug", "--", "/bin/sh", "-c", `echo "$DSB_IT_TOKEN"`}
	seen := map[string]bool{}
	for i, want := range []string{"not made: no record of this launch", "matched", "matched"} {
		r := run(t, p.dir, env, "", args...)
		if r.code != 0 || !strings.Contains(r.stderr, "devsandbox: debug: early start: "+want) {
			t.Fatalf("launch %d: want %q:\n%s", i, want, r)
		}
		ph := strings.TrimSpace(r.stdout)
		if !strings.HasPrefix(ph, "devsandbox-placeholder-") || seen[ph] {
			t.Errorf("launch %d: the sandbox's DSB_IT_TOKEN is %q, not a fresh placeholder", i, ph)
		}
		seen[ph] = true
	}
	for _, rec := range records(t, state) {
		b, err := os.ReadFile(rec)
		if err != nil {
			t.Fatal(err)
		}
		for ph := range seen {
			if strings.Contains(string(b), ph) || strings.Contains(string(b), "secret-token-value") {
				t.Errorf("the record %s holds a placeholder or the credential", rec)
			}
		}
	}
	if left := leftovers(t, state); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}

// TestEarlyStartConcurrent: two launches of the same command line at once each start
// their own early bwrap from the one record, in a session /tmp of its own, and both
// run; nothing is left.
func TestEarlyStartConcurrent(t *testing.T) {
	requireBwrap(t)
	p := newProject(t)
	env, state := p.earlyEnv()
	args := []string{"--isolator=bwrap", "--egress=none", "--debug", "--", "/bin/sh", "-c", "ls -a /tmp"}
	if r := run(t, p.dir, env, "", args...); r.code != 0 {
		t.Fatalf("first launch:\n%s", r)
	}
	var wg sync.WaitGroup
	rs := make([]result, 4)
	for i := range rs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rs[i] = run(t, p.dir, env, "", args...)
		}()
	}
	wg.Wait()
	for _, r := range rs {
		if r.code != 0 || r.stdout != ".\n..\n" {
			t.Errorf("a concurrent launch failed, or its /tmp was not its own:\n%s", r)
		}
		if !strings.Contains(r.stderr, "early start: made") || !strings.Contains(r.stderr, "early start: matched") {
			t.Errorf("a concurrent launch did not use its early start:\n%s", r.stderr)
		}
	}
	if left := leftovers(t, state); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}

// TestEarlyStartInterrupted: Ctrl-C while the early bwrap waits for the plan takes
// it and its child down (before devsandbox subscribes to signals it dies of it, and
// Pdeathsig and --die-with-parent follow; after, the run handles it); nothing is left
// running, and a session /tmp it made is left unlocked at worst, for the next
// launch's sweep of orphans. The interrupt is sent once devsandbox's child bwrap
// with --block-fd is seen; tried until that happened five times.
func TestEarlyStartInterrupted(t *testing.T) {
	requireBwrap(t)
	p := newProject(t)
	env, state := p.earlyEnv()
	args := []string{"--isolator=bwrap", "--egress=none", "--", "/bin/true"}
	if r := run(t, p.dir, env, "", args...); r.code != 0 {
		t.Fatalf("first launch:\n%s", r)
	}
	hits := 0
	for try := 0; try < 200 && hits < 5; try++ {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		cmd := command(ctx, p.dir, baseEnv(env...), args...)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		for waiting := true; waiting; {
			select {
			case <-done:
				waiting = false
			default:
				if earlyChild(cmd.Process.Pid) {
					_ = cmd.Process.Signal(os.Interrupt)
					hits++
					<-done
					waiting = false
				}
			}
		}
		cancel()
	}
	if hits < 5 {
		t.Fatalf("the interrupt reached an early start %d times in 200 launches", hits)
	}
	// The kernel's SIGKILL of the orphaned bwrap is asynchronous: wait for it.
	deadline := time.Now().Add(10 * time.Second)
	var left []string
	for {
		left = nil
		for _, l := range leftovers(t, state) {
			if strings.HasPrefix(l, "/proc/") || tmpdirLocked(l) {
				left = append(left, l)
			}
		}
		if len(left) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if len(left) > 0 {
		t.Errorf("left running or held: %v", left)
	}
	orphans, _ := filepath.Glob(filepath.Join(state, "*", "tmp", "*"))
	t.Logf("%d session /tmp directories left unlocked by %d interrupted early starts", len(orphans), hits)
}

// TestEarlyStartSignalWindow: a SIGTERM or SIGINT sent at any point of an early
// launch, from devsandbox's first instructions through the signal subscription made
// beside the record's read, bwrap's start and the release, is never lost: the launch
// ends by it, killed by it before the subscription is in effect (no bwrap exists
// then) or with the command's 128+signal once relayed, never waiting on; nothing is
// left running.
func TestEarlyStartSignalWindow(t *testing.T) {
	requireBwrap(t)
	p := newProject(t)
	env, state := p.earlyEnv()
	args := []string{"--isolator=bwrap", "--egress=none", "--", "/bin/sh", "-c", "read x; exit 0"}
	if r := run(t, p.dir, env, "", args...); r.code != 0 { // stdin at its end: read returns
		t.Fatalf("first launch:\n%s", r)
	}
	killed, relayed := 0, 0
	for i := 0; i < 60; i++ {
		sig := []syscall.Signal{syscall.SIGTERM, syscall.SIGINT}[i%2]
		// Spread over a launch's first milliseconds (its start, the subscription, the
		// record, bwrap's start) and past them: when it arrives is what varies, the
		// outcome must not.
		delay := time.Duration(i%40) * 100 * time.Microsecond
		if i >= 40 {
			delay = time.Duration(i-36) * time.Millisecond
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		cmd := command(ctx, p.dir, baseEnv(env...), args...)
		stdin, err := cmd.StdinPipe() // never written, never closed until the end: read waits
		if err != nil {
			t.Fatal(err)
		}
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(delay)
		if err := cmd.Process.Signal(sig); err != nil {
			t.Fatal(err)
		}
		err = cmd.Wait()
		lost := ctx.Err() != nil
		cancel()
		stdin.Close()
		ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
		switch {
		case lost:
			t.Fatalf("launch %d: %v after %v was lost: the launch waited on (%v)\n%s", i, sig, delay, err, stderr.String())
		case ws.Signaled() && ws.Signal() == sig:
			killed++
		case ws.Exited() && ws.ExitStatus() == 128+int(sig):
			relayed++
		default:
			t.Errorf("launch %d: %v after %v: %v, want killed by it or exit %d\n%s", i, sig, delay, err, 128+int(sig), stderr.String())
		}
	}
	t.Logf("%d launches killed before the subscription, %d ended by the signal relayed", killed, relayed)
	if relayed == 0 {
		t.Error("no signal reached a launch after its subscription: the window was not exercised")
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		var left []string
		for _, l := range leftovers(t, state) {
			if strings.HasPrefix(l, "/proc/") || tmpdirLocked(l) {
				left = append(left, l)
			}
		}
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("left running or held: %v", left)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// earlyChild reports whether the process pid has a child bwrap waiting on
// --block-fd (an early start not yet released).
func earlyChild(pid int) bool {
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	for _, f := range tasks {
		b, _ := os.ReadFile(f)
		for _, c := range strings.Fields(string(b)) {
			cl, _ := os.ReadFile("/proc/" + c + "/cmdline")
			if strings.Contains(string(cl), "--block-fd") {
				return true
			}
		}
	}
	return false
}

// tmpdirLocked reports whether the session /tmp dir is held (flock) by a run.
func tmpdirLocked(dir string) bool {
	fd, err := syscall.Open(dir, syscall.O_RDONLY|syscall.O_DIRECTORY, 0)
	if err != nil {
		return false
	}
	defer syscall.Close(fd)
	if err := syscall.Flock(fd, syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return true
	}
	_ = syscall.Flock(fd, syscall.LOCK_UN)
	return false
}

func toStrings(a []any) []string {
	s := make([]string, len(a))
	for i, v := range a {
		s[i] = v.(string)
	}
	return s
}

// TestEarlyStartLaunchPath: a launch that adopted an early start ("matched") behaves
// as the first launch of the same command line, which started bwrap itself: its exit
// status, its output, its stdin, its working directory, a session /tmp of its own
// (empty, and gone after it), a masked .env, in every egress mode.
func TestEarlyStartLaunchPath(t *testing.T) {
	requireBwrap(t)
	cases := []struct {
		name, stdin, script string
		flags               []string
		code                int
	}{
		{name: "exit status", script: `echo out; echo err >&2; exit 7`, code: 7},
		{name: "stdin", stdin: "from-stdin\n", script: `cat`},
		{name: "cwd", script: `pwd`},
		{name: "session tmp", script: `ls -A /tmp | wc -l; echo x >/tmp/early-probe && cat /tmp/early-probe`},
		{name: "masked env file", script: `cat .env; echo "[$(wc -c <.env)]"`},
		{name: "egress none", flags: []string{"--egress=none"}, script: `echo none`},
		{name: "egress proxy", flags: []string{"--egress=proxy"}, script: `echo "proxy ${HTTPS_PROXY:+set}"`},
		{name: "egress open", flags: []string{"--egress=open"}, script: `echo open`},
		{name: "read-only", flags: []string{"--read-only"}, script: `touch ro 2>/dev/null; echo $?`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := newProject(t)
			p.write("proj/.env", "EARLY_PATH_SECRET=v4lue-never-seen\n")
			env, state := p.earlyEnv()
			args := append(append([]string{"--isolator=bwrap", "--debug"}, c.flags...), "--", "/bin/sh", "-c", c.script)
			first := run(t, p.dir, env, c.stdin, args...)
			if first.code != c.code || !strings.Contains(first.stderr, "early start: not made: no record of this launch") {
				t.Fatalf("the first launch: want exit %d and no record:\n%s", c.code, first)
			}
			for range 2 {
				r := run(t, p.dir, env, c.stdin, args...)
				if !strings.Contains(r.stderr, "early start: matched") {
					t.Fatalf("the launch did not adopt its early start:\n%s", r)
				}
				if r.code != first.code || r.stdout != first.stdout {
					t.Errorf("the matched launch differs from the first:\nfirst: %s\nmatched: %s", first, r)
				}
				if strings.Contains(r.stdout+r.stderr, "v4lue-never-seen") {
					t.Errorf("the masked .env's value reached the sandbox:\n%s", r)
				}
			}
			if c.name == "cwd" && first.stdout != p.dir+"\n" {
				t.Errorf("pwd %q, want %q", first.stdout, p.dir)
			}
			if c.name == "session tmp" && first.stdout != "0\nx\n" {
				t.Errorf("the session /tmp: %q, want an empty one", first.stdout)
			}
			if left := leftovers(t, state); len(left) > 0 {
				t.Errorf("left behind: %v", left)
			}
		})
	}
}

// TestEarlyStartSignals: a launch that adopted its early start relays SIGTERM,
// SIGINT and SIGHUP to the command as an ordinary launch does (the signal
// subscription is made before the early bwrap starts, and Run relays through it),
// and a launch killed by one leaves nothing behind.
func TestEarlyStartSignals(t *testing.T) {
	requireBwrap(t)
	p := newProject(t)
	env, state := p.earlyEnv()
	args := []string{"--isolator=bwrap", "--debug", "--", "/bin/sh", "-c",
		`trap 'echo got-signal; exit 7' TERM INT HUP; echo ready; while :; do sleep 1; done`}
	for i, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP} {
		cmd := command(t.Context(), p.dir, baseEnv(env...), args...)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		lr := startLines(t, cmd)
		lr.waitFor("ready")
		if err := cmd.Process.Signal(sig); err != nil {
			t.Fatal(err)
		}
		lr.waitFor("got-signal")
		err := cmd.Wait()
		if code := cmd.ProcessState.ExitCode(); code != 7 {
			t.Errorf("%v: exit %d (%v), want the command's 7\n%s", sig, code, err, stderr.String())
		}
		want := "early start: matched"
		if i == 0 {
			want = "early start: not made: no record of this launch"
		}
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("%v: stderr lacks %q:\n%s", sig, want, stderr.String())
		}
	}
	if left := leftovers(t, state); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}

// TestEarlyStartOff: DEVSANDBOX_EARLY_START=0 (off, false, and a value it does not
// take) reads no launch record and writes none: from a fresh state no record
// directory is made, and a record that is not a record (which a launch that reads it
// removes) is still there after; --debug says why, and a value it does not take is
// one warning line on stderr with or without --debug (it was silent before).
func TestEarlyStartOff(t *testing.T) {
	requireBwrap(t)
	p := newProject(t)
	p.mkdir("state")
	state := filepath.Join(p.path("state"), "devsandbox")
	args := []string{"--isolator=bwrap", "--egress=none", "--debug", "--", "/bin/true"}
	for _, tc := range []struct{ value, why string }{
		{"0", `off: DEVSANDBOX_EARLY_START="0"`},
		{"off", `off: DEVSANDBOX_EARLY_START="off"`},
		{"false", `off: DEVSANDBOX_EARLY_START="false"`},
		{"maybe", `off: DEVSANDBOX_EARLY_START="maybe" is not a value it takes (1, on, true, yes, always; 0, off, false, no)`},
	} {
		env := []string{"XDG_STATE_HOME=" + p.path("state"), "DEVSANDBOX_EARLY_START=" + tc.value}
		for range 2 {
			r := run(t, p.dir, env, "", args...)
			if r.code != 0 {
				t.Fatalf("%s: launch failed:\n%s", tc.value, r)
			}
			if !strings.Contains(r.stderr, "devsandbox: debug: early start: "+tc.why+"\n") {
				t.Errorf("%s: stderr does not say %q:\n%s", tc.value, tc.why, r.stderr)
			}
			// A value it does not take is also one warning line, --debug or not.
			warning := ""
			if tc.value == "maybe" {
				warning = "devsandbox: warning: " + strings.TrimPrefix(tc.why, "off: ") + "; the early start is off\n"
			}
			if q := run(t, p.dir, env, "", "--isolator=bwrap", "--egress=none", "--", "/bin/true"); q.code != 0 || q.stderr != warning {
				t.Errorf("%s: without --debug, stderr %q, want %q\n%s", tc.value, q.stderr, warning, q)
			}
		}
		if _, err := os.Lstat(filepath.Join(state, "prestart")); !os.IsNotExist(err) {
			t.Fatalf("%s: the launch records' directory is there (%v): a record was written", tc.value, err)
		}
	}
	// A record of this launch, then garbage in its place: a launch that read it would
	// remove it (a record that does not decode).
	on := []string{"XDG_STATE_HOME=" + p.path("state"), "DEVSANDBOX_EARLY_START=always"}
	if r := run(t, p.dir, on, "", args...); r.code != 0 {
		t.Fatalf("launch with the early start:\n%s", r)
	}
	recs := records(t, state)
	if len(recs) != 1 {
		t.Fatalf("records %v, want one", recs)
	}
	if err := os.WriteFile(recs[0], []byte("not a record"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(recs[0], it.uid, it.gid); err != nil {
		t.Fatal(err)
	}
	off := []string{"XDG_STATE_HOME=" + p.path("state"), "DEVSANDBOX_EARLY_START=0"}
	if r := run(t, p.dir, off, "", args...); r.code != 0 {
		t.Fatalf("launch with DEVSANDBOX_EARLY_START=0:\n%s", r)
	}
	if b, err := os.ReadFile(recs[0]); err != nil || string(b) != "not a record" {
		t.Errorf("with DEVSANDBOX_EARLY_START=0 the record was read or rewritten: %q, %v", b, err)
	}
	if left := leftovers(t, state); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}

// TestEarlyStartConfigOff: sandbox.early_start = false, read after the early bwrap
// started, abandons that start (no process, session /tmp or mount of it left) and
// removes the launch's record and those of the project's other command lines (not
// another project's), so that the next launch starts nothing early and records
// nothing.
func TestEarlyStartConfigOff(t *testing.T) {
	requireBwrap(t)
	p := newProject(t)
	env, state := p.earlyEnv()
	conf := p.path("early.toml")
	p.write("early.toml", "")
	args := []string{"--isolator=bwrap", "--egress=none", "--debug", "--config=" + conf, "--", "/bin/sh", "-c", "ls -a /tmp"}
	launch := func(want ...string) {
		t.Helper()
		r := run(t, p.dir, env, "", args...)
		if r.code != 0 || r.stdout != ".\n..\n" {
			t.Fatalf("the launch failed:\n%s", r)
		}
		for _, w := range want {
			if !strings.Contains(r.stderr, "devsandbox: debug: early start: "+w) {
				t.Errorf("stderr lacks %q:\n%s", "early start: "+w, r.stderr)
			}
		}
	}
	launch("not made: no record of this launch")
	launch("made", "matched")
	// Another command line of the project, and a launch of another project: a record
	// each.
	if r := run(t, p.dir, env, "", "--isolator=bwrap", "--egress=none", "--config="+conf, "--", "/bin/true"); r.code != 0 {
		t.Fatalf("another command line:\n%s", r)
	}
	p.mkdir("other/.git")
	if r := run(t, p.path("other"), env, "", "--isolator=bwrap", "--egress=none", "--", "/bin/true"); r.code != 0 {
		t.Fatalf("another project:\n%s", r)
	}
	recs := records(t, state)
	if len(recs) != 3 {
		t.Fatalf("records %v, want three", recs)
	}
	p.write("early.toml", "[sandbox]\nearly_start = false\n")
	// The project's records go at once, the other project's stays.
	launch(fmt.Sprintf("off: sandbox.early_start = false (%s); before the configuration: made; 2 launch records of this project removed\n", conf))
	if left := records(t, state); len(left) != 1 {
		t.Errorf("records %v after sandbox.early_start = false, want the other project's alone", left)
	} else if b, err := os.ReadFile(left[0]); err != nil || !strings.Contains(string(b), p.path("state/devsandbox/other-")) {
		t.Errorf("the record left is not the other project's (%v):\n%.300s", err, b)
	}
	launch(fmt.Sprintf("off: sandbox.early_start = false (%s); before the configuration: not made: no record of this launch\n", conf))
	if recs := records(t, state); len(recs) != 1 {
		t.Errorf("records %v after a launch with sandbox.early_start = false, want the other project's alone", recs)
	}
	if left := leftovers(t, state); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
	if b, err := os.ReadFile("/proc/self/mountinfo"); err != nil || strings.Contains(string(b), state) {
		t.Errorf("a mount of the state directory is left on the host (%v):\n%s", err, b)
	}
}

// TestEarlyStartModeOff: a launch that runs its command without a sandbox
// (sandbox.mode = "off") does not keep the early bwrap its record started waiting
// beside the command: it is gone before the command runs.
func TestEarlyStartModeOff(t *testing.T) {
	requireBwrap(t)
	p := newProject(t)
	env, state := p.earlyEnv()
	conf := p.path("early.toml")
	p.write("early.toml", "")
	// The early bwraps of this test's state directory (the pattern does not match
	// its own command line).
	script := `for f in /proc/[0-9]*/cmdline; do tr '\0' ' ' <"$f" 2>/dev/null; echo; done | grep -c -e '--block-f[d] .*` + p.path("state") + `'`
	args := []string{"--isolator=bwrap", "--egress=none", "--debug", "--config=" + conf, "--", "/bin/sh", "-c", script}
	if r := run(t, p.dir, env, "", args...); r.code != 1 || r.stdout != "0\n" {
		t.Fatalf("first launch (no record, no early bwrap expected):\n%s", r)
	}
	p.write("early.toml", "[sandbox]\nmode = \"off\"\n")
	r := run(t, p.dir, env, "", args...)
	if r.code != 1 || !strings.Contains(r.stderr, "sandbox.mode is off") {
		t.Fatalf("the unsandboxed launch:\n%s", r)
	}
	if r.stdout != "0\n" {
		t.Errorf("an early bwrap waited beside the unsandboxed command (%q early bwraps):\n%s", r.stdout, r)
	}
	if left := leftovers(t, state); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}
