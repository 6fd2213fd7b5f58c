//go:build integration

package integration

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The watch's last check of a kept container's session (what the sandbox wrote that
// host git obeys: a submodule's config here) must come after the last process of that
// session is gone. A session whose command stopped its init (SIGSTOP reaches it: it is
// not the container's pid 1) survives devsandbox's end until the keeper kills it, and
// a process of it that keeps writing core.fsmonitor into the submodule's config would
// otherwise leave it there once the run's last check was done: nothing checks it
// again, and the next `git status` on the host runs it.
func TestKeptSessionWritesAfterLastCheck(t *testing.T) {
	requireGit(t)
	forEachDocker(t, func(t *testing.T, iso string) {
		p := newProject(t)
		src := p.newRepo("subsrc")
		p.newRepo("proj")
		mustHostGit(t, p.dir, "-c", "protocol.file.allow=always", "submodule", "add", "-q", src, "sub")
		mustHostGit(t, p.dir, "commit", "-qm", "sub")
		cfg := p.path("proj/.git/modules/sub/config")
		before, err := os.ReadFile(cfg)
		if err != nil {
			t.Fatal(err)
		}
		marker := p.path("PWNED")
		p.write("proj/evil-config", string(before)+"[core]\n\tfsmonitor = \""+fsmonitor(marker)+"\"\n")
		keep := []string{"--isolator=" + iso, "--keep-container", "--egress=none"}
		settle(p, iso, keep[1:])
		ids := projectContainers(t, iso, p, false)
		if len(ids) != 1 {
			t.Fatalf("want one kept container, have %v", ids)
		}
		idle := len(containerPids(t, iso, ids[0]))
		// A session that ends on its own says so itself: the run asks the keeper
		// nothing (an exec more per run), with its command started before the hello
		// (no secret, egress none) or after it (a secret).
		since := time.Now()
		p.mustSandbox(iso, keep[1:], `true`)
		if r := run(t, p.dir, []string{"API_TOKEN=s3cret"}, "", append(keep, "-e", "API_TOKEN", "--", "/bin/sh", "-c", "true")...); r.code != 0 {
			t.Fatalf("a run with a secret:\n%s", r)
		}
		if ev := dockerAt(t, iso, "events", "--since", unixTime(since), "--until", unixTime(time.Now()), "--filter", "container="+ids[0], "--filter", "event=exec_create", "--format", "{{.Action}}"); !strings.Contains(ev, "role=session") || strings.Contains(ev, "role=end") {
			t.Errorf("the runs whose sessions ended on their own made these execs:\n%s", ev)
		}

		// The writer ignores the signals a session's end sends; its session's init
		// is stopped, so only the keeper (or devsandbox) can end it.
		script := `(trap '' TERM HUP INT; while :; do cat evil-config > .git/modules/sub/config; sleep 0.05; done) </dev/null >/dev/null 2>&1 &
			kill -STOP $PPID; touch stopped; sleep 1000`
		errs, err := os.CreateTemp(it.tmp, "keptwatch-")
		if err != nil {
			t.Fatal(err)
		}
		defer os.Remove(errs.Name())
		defer errs.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		cmd := command(ctx, p.dir, baseEnv(), append(keep, "--", "/bin/sh", "-c", script)...)
		cmd.Stderr = errs // the backend's helper writes here itself, past devsandbox's end
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
		for {
			if _, err := os.Stat(p.path("proj/stopped")); err == nil {
				break
			}
			if ctx.Err() != nil {
				t.Fatal("the command never stopped its session init")
			}
			time.Sleep(20 * time.Millisecond)
		}
		helpers := childPids(cmd.Process.Pid)
		if len(helpers) == 0 {
			t.Fatalf("devsandbox (%d) has no helper process", cmd.Process.Pid)
		}
		// devsandbox is killed: its helper (the docker backend) ends the session and
		// does the watch's last check on its own, then exits.
		if err := cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		_ = cmd.Wait()
		for _, h := range helpers {
			waitExit(t, h, 60*time.Second)
		}
		// Then everything of the session is gone (the keeper's backstop).
		for deadline := time.Now().Add(30 * time.Second); len(containerPids(t, iso, ids[0])) != idle; time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("the session's processes outlived it:\n%s", dockerAt(t, iso, "top", ids[0]))
			}
		}
		reports, _ := os.ReadFile(errs.Name())
		after, err := os.ReadFile(cfg)
		if err != nil {
			t.Fatalf("the submodule's config after the run: %v\n%s", err, reports)
		}
		if strings.Contains(string(after), "fsmonitor") {
			t.Errorf("a process of the ended session wrote the submodule's config after the watch's last check: it names core.fsmonitor once everything of the session is gone; devsandbox's stderr:\n%s", reports)
		}
		assertNotRun(t, marker, p.dir, p.path("proj/sub"))
	})
}

// unixTime is t as docker events' --since and --until take it.
func unixTime(t time.Time) string { return fmt.Sprintf("%d.%09d", t.Unix(), t.Nanosecond()) }

// childPids lists the children of process pid (/proc/PID/task/*/children).
func childPids(pid int) []int {
	var out []int
	tasks, _ := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
	for _, task := range tasks {
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + task.Name() + "/children")
		for _, f := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(f); err == nil {
				out = append(out, n)
			}
		}
	}
	return out
}

// waitExit waits up to limit for process pid to exit (a pidfd: a reused pid cannot
// stand in for it).
func waitExit(t *testing.T, pid int, limit time.Duration) {
	t.Helper()
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return // gone already
	}
	defer unix.Close(fd)
	// pidfdExited asks again when a signal interrupts the wait (the Go runtime's
	// preemption does): taken for a timeout, it failed a CI in 3.6 s as "did not exit
	// within 1m0s".
	if err := pidfdExited(fd, time.Now().Add(limit)); err != nil {
		t.Fatalf("process %d did not exit within %v: %v", pid, limit, err)
	}
}
