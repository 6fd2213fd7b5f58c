//go:build integration

package integration

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/devsandbox/devsandbox/internal/procs"
	"github.com/devsandbox/devsandbox/isolator/tty"
	"golang.org/x/sys/unix"
)

// The command counts in the background (each count a file renamed into place)
// while it waits for its line, from before it says ready; the count stops once
// the line is read. A second counter runs in a session of its own (it left the
// command's process group): the stop must reach it too, wherever devsandbox
// stops the sandbox without the engine's pause (the init's stop of the session's
// processes), as where it pauses it.
const jobCmdScript = `rm -f count away; (i=0; while :; do i=$((i+1)); echo $i >.count.t; mv -f .count.t count; done) & c=$!; ` +
	`setsid /bin/sh -c 'i=0; while :; do i=$((i+1)); echo $i >.away.t; mv -f .away.t away; done' & w=$!; ` +
	`until [ -e count ] && [ -e away ]; do :; done; echo ready; read -r a; kill $c $w; echo "cmd[$a]"`

// While the run is stopped, the shell forks and execs as often as the command's
// counter would count: a run that is not stopped counts on meanwhile, whatever
// the machine's speed (the two counts are read before and after it).
const jobBusy = `for ((n = 0; n < 100; n++)); do /bin/true; done`

// TestJobControl: devsandbox as a job of a shell with job control, stdin the
// shell's terminal (the test's pty, the controlling terminal of the shell's
// session), stdout a pipe, on every isolator. A line typed for the shell while the
// run is stopped (Ctrl-Z), or while it runs in the background, must reach the shell,
// not the sandboxed command; while the run is stopped, the command makes no
// progress (a counter it writes to the project does not move); once the run is in
// the foreground again (`fg`), the command goes on and reads what is typed then.
// The shell is an interactive bash, so the terminal's foreground process group is
// moved as an interactive shell moves it.
func TestJobControl(t *testing.T) {
	const cmdScript, busy = jobCmdScript, jobBusy
	forEachIsolator(t, func(t *testing.T, iso string) {
		if iso == "krun" {
			requireKVMDevice(t)
		}
		p := newProject(t)
		count := func() string {
			var both []string
			for _, f := range []string{"count", "away"} {
				b, err := os.ReadFile(filepath.Join(p.dir, f))
				if err != nil {
					t.Errorf("the command's counter: %v", err)
				}
				both = append(both, f+"="+strings.TrimSpace(string(b)))
			}
			return strings.Join(both, " ")
		}
		// krun binds the plan's anchors (the directories holding a masked file)
		// from a helper, stage-anchors, that lives as long as the run: in a process
		// group of its own, the terminal's stop of devsandbox's group (Ctrl-Z)
		// does not reach it; in devsandbox's, it stays stopped for good, and the
		// run hangs at its end (s32). The project's sub/.env makes an anchor (sub).
		p.write("proj/sub/.env", "SECRET=1\n")
		var sub *testing.T // the running case's
		anchors := func(sid int) {
			t := sub
			if iso != "krun" {
				return
			}
			found := false
			for _, pr := range sessionProcesses(sid) {
				if !strings.Contains(pr, "stage-anchors") {
					continue
				}
				found = true
				if f := strings.Fields(pr); f[1] == "T" {
					t.Errorf("krun's stage-anchors was stopped with devsandbox (%q): nothing continues it", pr)
				}
			}
			if !found {
				t.Errorf("no stage-anchors in the run's processes while it is stopped: the plan made no anchor to check on krun (%q)", sessionProcesses(sid))
			}
		}
		var stopped, later string
		cases := []struct {
			name, shell string
			steps       []jobStep
			want        string
			// check runs after the run, on what the steps saw.
			check func(t *testing.T)
		}{
			{
				// Ctrl-Z: devsandbox stops with SIGTSTP (status 148, as a native
				// command), the sandbox with it: the counter stays still while the
				// shell reads its line; fg resumes both.
				name: "ctrl_z",
				// The second count is read while the shell waits for a second line
				// of its own, before its fg: read once the shell's first line is
				// echoed, it could come after the fg that follows (the shell does not
				// wait for the test), and saw the command's count go on (1 run in 7).
				shell: `"$@"; echo "status[$?]"; ` + busy + `; read -r l; echo "shell[$l]"; read -r g; echo "go[$g]"; fg %1 >/dev/null; echo "end[$?]"`,
				steps: []jobStep{
					{after: "ready\n", keys: "\x1a"},
					{after: "status[", keys: "for-the-shell\n", at: func() { stopped = count() }, atSession: anchors},
					{after: "shell[", keys: "go\n", at: func() { later = count() }},
					{after: "go[", keys: "for-the-command\n"},
				},
				want: "ready\nstatus[148]\nshell[for-the-shell]\ngo[go]\ncmd[for-the-command]\nend[0]\n",
				check: func(t *testing.T) {
					if stopped == "" || stopped != later {
						t.Errorf("the command's counter moved while the run was stopped: %q, then %q", stopped, later)
					}
				},
			},
			{
				// Ctrl-Z then bg: a run whose stdin is the terminal stays stopped in
				// the background (a native command reading the terminal would stop);
				// fg resumes it. A fg within microseconds of the bg (here: the line for
				// the shell is typed already) can come between devsandbox's check that
				// it is in the background and its stop, and finds it stopped again: a
				// second fg resumes it, as a user would type.
				// The line for the shell is typed once the job is in the background,
				// and the counter must not move meanwhile: a run continued by the bg
				// would read keys typed for the shell.
				name:  "ctrl_z_bg",
				shell: `"$@"; echo "status[$?]"; bg %1 >/dev/null; echo "bg[]"; ` + busy + `; read -r l; echo "shell[$l]"; read -r g; echo "go[$g]"; fg %1 >/dev/null || fg %1 >/dev/null; echo "end[$?]"`,
				steps: []jobStep{
					{after: "ready\n", keys: "\x1a"},
					{after: "bg[]", keys: "for-the-shell\n", at: func() { stopped = count() }, atSession: anchors},
					{after: "shell[", keys: "go\n", at: func() { later = count() }},
					{after: "go[", keys: "for-the-command\n"},
				},
				want: "ready\nstatus[148]\nbg[]\nshell[for-the-shell]\ngo[go]\ncmd[for-the-command]\nend[0]\n",
				check: func(t *testing.T) {
					if stopped == "" || stopped != later {
						t.Errorf("the command's counter moved while the run was stopped in the background: %q, then %q", stopped, later)
					}
				},
			},
			{
				// Started in the background with the terminal on stdin: the command
				// runs (a build that never reads stdin goes on) with stdin /dev/null,
				// as a POSIX shell without job control gives an asynchronous command.
				name:  "background",
				shell: `"$@" & read -r l; wait %1; echo "shell[$l]"; echo "end[$?]"`,
				steps: []jobStep{{after: "ready\n", keys: "for-the-shell\n"}},
				want:  "ready\ncmd[]\nshell[for-the-shell]\nend[0]\n",
			},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				sub = t
				got := jobControlRun(t, p.dir, c.shell, c.steps, c.want, "--isolator="+iso, "--", "/bin/sh", "-c", cmdScript)
				if got != c.want {
					t.Fatalf("output %q, want %q", got, c.want)
				}
				if c.check != nil {
					c.check(t)
				}
			})
		}
	})
}

// TestJobControlInnerStop: a job the command's own shell stopped stays stopped
// through devsandbox's Ctrl-Z and fg: the resume continues what the stop stopped,
// and only that, as the kernel's job control continues devsandbox's own job alone.
// The command stops a busy loop of its own, then reads its line after the fg, does
// work enough for the resume to have reached every process of the sandbox, and
// tells the loop's state.
func TestJobControlInnerStop(t *testing.T) {
	const cmdScript = `(while :; do :; done) & s=$!; kill -STOP $s; ` +
		`until read -r _ _ st _ </proc/$s/stat && [ "$st" = T ]; do :; done; echo ready; read -r a; ` +
		`n=0; while [ $n -lt 100 ]; do cat </dev/null; n=$((n+1)); done; ` +
		`read -r _ _ st _ </proc/$s/stat; kill -9 $s; echo "inner[$st]"`
	forEachIsolator(t, func(t *testing.T, iso string) {
		if iso == "krun" {
			requireKVMDevice(t)
		}
		p := newProject(t)
		shell := `"$@"; echo "status[$?]"; fg %1 >/dev/null; echo "end[$?]"`
		want := "ready\nstatus[148]\ninner[T]\nend[0]\n"
		got := jobControlRun(t, p.dir, shell, []jobStep{
			{after: "ready\n", keys: "\x1a"},
			{after: "status[", keys: "go\n"},
		}, want, "--isolator="+iso, "--", "/bin/sh", "-c", cmdScript)
		if got != want {
			t.Fatalf("output %q, want %q: the job the command had stopped itself was continued by devsandbox's fg", got, want)
		}
	})
}

// jobStep types keys on the terminal once the output holds after, having called at
// (when set).
type jobStep struct {
	after, keys string
	at          func()
	// atSession, when set, is called with the shell's session id (the run's
	// processes are in it) once the output holds after.
	atSession func(sid int)
}

// jobControlRun runs `bash -c shell bash devsandbox args...` as the leader of a new
// session whose controlling terminal is a pty (stdin), stdout and stderr a pipe, and
// types each step's keys once the output holds its after text. It returns the
// output without the shell's job reports ("[1]+ Stopped ..."), and ends the run as
// soon as that output is no longer a beginning of want.
func jobControlRun(t *testing.T, dir, shell string, steps []jobStep, want string, args ...string) string {
	t.Helper()
	got, _ := jobControlRunAll(t, dir, shell, steps, want, args...)
	return got
}

// jobControlRunAll is jobControlRun that returns the whole output too (the job
// reports and devsandbox's notes).
func jobControlRunAll(t *testing.T, dir, shell string, steps []jobStep, want string, args ...string) (string, string) {
	t.Helper()
	master, slave, err := tty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer master.Close()
	defer slave.Close()
	if it.asOther {
		if err := unix.Fchown(int(slave.Fd()), it.uid, it.gid); err != nil {
			t.Fatal(err)
		}
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	cmd := command(ctx, dir, baseEnv("TERM=xterm"), args...)
	cmd.Args = append([]string{"bash", "--norc", "--noprofile", "-i", "-c", shell, "bash"}, cmd.Args...)
	cmd.Path = "/bin/bash"
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, pw, pw
	cmd.SysProcAttr.Setsid, cmd.SysProcAttr.Setctty, cmd.SysProcAttr.Ctty = true, true, 0
	go func() { _, _ = io.Copy(io.Discard, master) }() // the terminal's echo
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	defer procs.KillSession(cmd.Process.Pid)
	go func() { // a hung run: what holds the pipe goes
		<-ctx.Done()
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			if ps, err := exec.Command("ps", "-o", "pid,pgid,stat,wchan:20,args", "-s", strconv.Itoa(cmd.Process.Pid)).CombinedOutput(); err == nil {
				t.Logf("the hung run's processes:\n%s", ps)
			}
		}
		procs.KillSession(cmd.Process.Pid)
	}()
	var out []byte
	buf := make([]byte, 4096)
	for {
		n, err := pr.Read(buf)
		out = append(out, buf[:n]...)
		if got := withoutJobReports(out); !strings.HasPrefix(want, got) {
			procs.KillSession(cmd.Process.Pid) // devsandbox and the shell: the output is wrong already
		}
		for len(steps) > 0 && bytes.Contains(out, []byte(steps[0].after)) {
			if steps[0].at != nil {
				steps[0].at()
			}
			if steps[0].atSession != nil {
				steps[0].atSession(cmd.Process.Pid)
			}
			if _, err := master.Write([]byte(steps[0].keys)); err != nil {
				t.Fatal(err)
			}
			steps = steps[1:]
		}
		if err != nil {
			break
		}
	}
	werr := cmd.Wait()
	if ctx.Err() != nil {
		procs.KillSession(cmd.Process.Pid)
	}
	if got := withoutJobReports(out); got != want {
		t.Logf("the shell ended: %v; its whole output: %q", werr, out)
	}
	return withoutJobReports(out), string(out)
}

// withoutJobReports is the complete lines of out that are not a shell's job reports
// (nor the empty line before one), nor devsandbox's notes (an image being prepared).
func withoutJobReports(out []byte) string {
	var kept []byte
	for _, l := range bytes.SplitAfter(out, []byte("\n")) {
		if bytes.HasSuffix(l, []byte("\n")) && len(l) > 1 && !bytes.HasPrefix(l, []byte("[")) && !bytes.HasPrefix(l, []byte("devsandbox: ")) {
			kept = append(kept, l...)
		}
	}
	return string(kept)
}

// TestJobControlKept: a session of a kept container stopped with Ctrl-Z stops what
// it runs (its counters, the one in a session of its own included), and only that:
// another session of the same container, another terminal's agent, goes on
// meanwhile. The engine's pause would freeze the whole container, that session too.
func TestJobControlKept(t *testing.T) {
	forEachDockerRootless(t, func(t *testing.T, iso string) {
		p := newProject(t)
		flags := []string{"--keep-container"}
		settle(p, iso, flags)
		other := startKept(t, p, iso, flags, nil,
			`rm -f other; (i=0; while :; do i=$((i+1)); echo $i >.other.t; mv -f .other.t other; done) & `+
				`until [ -e other ]; do :; done; echo up; read -r _; kill $!`)
		other.waitFor("up")
		read := func(names ...string) string {
			var all []string
			for _, f := range names {
				b, err := os.ReadFile(filepath.Join(p.dir, f))
				if err != nil {
					t.Errorf("a counter: %v", err)
				}
				all = append(all, f+"="+strings.TrimSpace(string(b)))
			}
			return strings.Join(all, " ")
		}
		var mine, mineLater, others, othersLater string
		shell := `"$@"; echo "status[$?]"; ` + jobBusy + `; read -r l; echo "shell[$l]"; read -r g; echo "go[$g]"; fg %1 >/dev/null; echo "end[$?]"`
		want := "ready\nstatus[148]\nshell[for-the-shell]\ngo[go]\ncmd[for-the-command]\nend[0]\n"
		got := jobControlRun(t, p.dir, shell, []jobStep{
			{after: "ready\n", keys: "\x1a"},
			{after: "status[", keys: "for-the-shell\n", at: func() { mine, others = read("count", "away"), read("other") }},
			{after: "shell[", keys: "go\n", at: func() { mineLater, othersLater = read("count", "away"), read("other") }},
			{after: "go[", keys: "for-the-command\n"},
		}, want, append([]string{"--isolator=" + iso}, append(flags, "--", "/bin/sh", "-c", jobCmdScript)...)...)
		if got != want {
			t.Fatalf("output %q, want %q", got, want)
		}
		if mine == "" || mine != mineLater {
			t.Errorf("the stopped session's counters moved while it was stopped: %q, then %q", mine, mineLater)
		}
		if others == othersLater {
			t.Errorf("the kept container's other session did not run while this one was stopped (%q, then %q): the stop froze more than this session", others, othersLater)
		}
		other.step()
		other.waitEnd()
	})
}

// sessionProcesses returns the command lines of the processes of session sid, with
// their process group and state ("PGID STATE ARGS").
func sessionProcesses(sid int) []string {
	var out []string
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(b, ')')
		f := strings.Fields(string(b[i+1:]))
		if i < 0 || len(f) < 4 || f[3] != strconv.Itoa(sid) {
			continue
		}
		args, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		out = append(out, f[2]+" "+f[0]+" "+strings.ReplaceAll(strings.TrimRight(string(args), "\x00"), "\x00", " "))
	}
	return out
}
