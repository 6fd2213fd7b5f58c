//go:build integration

package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/devsandbox/devsandbox/config"
	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/isolator/bwrap"
	dockerhelper "github.com/devsandbox/devsandbox/isolator/docker/helper"
	krunhelper "github.com/devsandbox/devsandbox/isolator/krun/helper"
	"github.com/devsandbox/devsandbox/isolator/planner"
	"github.com/devsandbox/devsandbox/isolator/tmpdir"
	dsbtools "github.com/devsandbox/devsandbox/tools"
)

// embedEnv, when set in the environment of the test binary, makes it an agent
// harness that embeds devsandbox as a library: it runs the embedJob the variable
// holds (JSON) with the importable packages only, as the test user, and reports on
// stdout: "out I LINE" for each line run I prints, then "result I CODE ERR" (ERR is
// "nil", "canceled", "deadline" or the error's text).
const embedEnv = "DEVSANDBOX_IT_EMBED"

// embedJob is one harness process's work: a run per dir, all at once, under one
// context.
type embedJob struct {
	Iso     string   // "bwrap", "docker" or "krun"
	Bin     string   // the installed devsandbox: its init, proxy, devsandbox-docker and devsandbox-krun are beside it
	Version string   // the installed devsandbox's version (its derived images carry it)
	Dirs    []string // the projects; the same one may come twice
	Script  string   // run I runs sh -c Script with $1 = I
	// CancelOnStart cancels the context when a run prints "started"; Deadline, when
	// set, is the context's timeout.
	CancelOnStart bool
	Deadline      time.Duration
	StopGrace     time.Duration // the isolator's StopGrace
	Egress        string        // egress.mode ("": the default)
	Keep          bool          // docker.keep_container
	// OwnUSR1: the harness handles SIGUSR1 itself (signal.Notify). When a run prints
	// "started", it sends itself SIGUSR1, reports "usr1 I got" once its handler has
	// it, then writes "go" on the run's stdin (which is otherwise empty).
	OwnUSR1 bool
	// Config is a --config file for every run; Unlink, a path each run removes once
	// its Plan is built, before the isolator starts (a host file gone in between).
	Config, Unlink string
	// ViewPaths: before Run, the harness makes its file tools' View of the Plan
	// (embedView); after, it reports as the run's lines, for each path, what Open
	// lets it read and whether it lets it write: "view r PATH ok CONTENT" or
	// "view r PATH err CLASS", and "view w PATH ok|err CLASS" (CONTENT as viewLine
	// renders it; writing nothing).
	ViewPaths []string
	// Library: the harness runs Script for Dirs[0] itself, as a subprocess built by
	// bwrap.Command (a default Plan's command line, WrapArgv, is refused: the ssh
	// tool's config and the syscall policy reach bwrap as descriptors), with its own
	// stdin as the command's, inside a library session (bwrap.Begin) with a session /tmp it holds
	// (tmpdir.Acquire), and reports "out 0 paths HOME STATE TMP" (the sandbox home,
	// the state directory, the session /tmp, "-" for a tmpfs) before the command starts; after it
	// exits, "out 0 exit CODE" (and "out 0 stopped ERR" when the session's disk
	// reserve killed it), then it ends the session and reports "result 0 0 nil".
	Library bool `json:",omitempty"`
	// Repeat: the harness runs Script for Dirs[0] Repeat+1 times, one after the
	// other, with the garbage collector off (no finalizer closes what a run left
	// open), and reports "fds 0 START END [NEW…]": the number of its open
	// descriptors after the first run (which opens what the process keeps, such as
	// the network poller's) and after the last, and what the new ones name.
	Repeat int `json:",omitempty"`
	// OneWriter: each run's Stdio has its output writer as both Out and Err (a
	// harness that keeps one transcript of the command's output).
	OneWriter bool `json:",omitempty"`
}

// serveEmbed is the harness (see embedEnv). It returns its exit status.
func serveEmbed() int {
	var job embedJob
	if err := json.Unmarshal([]byte(os.Getenv(embedEnv)), &job); err != nil {
		fmt.Fprintln(os.Stderr, "embed: bad job:", err)
		return 2
	}
	if job.Library {
		return serveLibrary(job)
	}
	if job.Repeat > 0 {
		return serveRepeat(job)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if job.Deadline > 0 {
		ctx, cancel = context.WithTimeout(ctx, job.Deadline)
		defer cancel()
	}
	var mu sync.Mutex
	say := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Printf(format+"\n", args...)
	}
	usr1 := make(chan os.Signal, 1)
	if job.OwnUSR1 {
		signal.Notify(usr1, syscall.SIGUSR1)
	}
	var wg sync.WaitGroup
	for i, dir := range job.Dirs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var in, inW *os.File
			if job.OwnUSR1 {
				var err error
				if in, inW, err = os.Pipe(); err != nil {
					say("result %d 0 %v", i, err)
					return
				}
				defer in.Close()
				defer inW.Close()
			}
			out := &embedLines{emit: func(l string) {
				say("out %d %s", i, l)
				if job.CancelOnStart && l == "started" {
					cancel()
				}
				if job.OwnUSR1 && l == "started" {
					_ = syscall.Kill(os.Getpid(), syscall.SIGUSR1)
					select {
					case <-usr1:
						say("usr1 %d got", i)
					case <-time.After(time.Minute):
						say("usr1 %d lost", i)
					}
					_, _ = inW.WriteString("go\n")
					inW.Close()
				}
			}}
			code, err := embedRun(ctx, job, i, dir, in, out)
			out.flush()
			what := "nil"
			switch {
			case errors.Is(err, context.Canceled):
				what = "canceled"
			case errors.Is(err, context.DeadlineExceeded):
				what = "deadline"
			case err != nil:
				what = strings.ReplaceAll(err.Error(), "\n", " ")
			}
			say("result %d %d %s", i, code, what)
		}()
	}
	wg.Wait()
	return 0
}

// embedRun is what a harness does for one run: the configuration of the project at
// dir, the Plan, the isolator, Run (with in as its stdin, when set). It turns on no
// signal forwarding: the library's default.
func embedRun(ctx context.Context, job embedJob, i int, dir string, in *os.File, out io.Writer) (int, error) {
	flags := config.Flags{ConfigFile: job.Config}
	if job.Egress != "" {
		flags.Egress = &job.Egress
	}
	l, err := planner.LoadDir(dir, flags, os.Environ(), dsbtools.Default())
	if err != nil {
		return 0, err
	}
	b := &bwrap.Isolator{StopGrace: job.StopGrace}
	if job.Iso == "bwrap" {
		// The /etc snapshot of the view LoadDir is working out opens while the Plan is built.
		b.EtcHead = bwrap.EtcAhead(l.System)
		defer b.EtcHead.Close()
	}
	cfg, pr := l.Config, l.Probe
	// The plan's init is the installed devsandbox's, not this program.
	pr.Executable = func() (string, error) { return job.Bin, nil }
	p, _, err := planner.Build(cfg, dsbtools.Default(), pr, planner.Request{Command: []string{"/bin/sh", "-c", job.Script, "embed", strconv.Itoa(i)}})
	if err != nil {
		return 0, err
	}
	if job.Unlink != "" {
		if err := os.Remove(job.Unlink); err != nil {
			return 0, err
		}
	}
	var iso isolator.Isolator = b
	switch job.Iso {
	case localDocker:
		s := dockerhelper.New(dockerhelper.Settings{
			Image: "devsandbox/default:" + job.Version, Home: cfg.Docker.Home, Version: job.Version,
			Host: cfg.Docker.Host, HostHome: cfg.Host.Home, Keep: job.Keep, StopGrace: job.StopGrace,
		}, cfg.Host.Vars, nil)
		s.Path = filepath.Join(filepath.Dir(job.Bin), dockerhelper.Program)
		iso = s
	case "krun":
		k, h := cfg.Krun, cfg.Host
		s := krunhelper.Stub(krunhelper.Settings{
			Image: "devsandbox/default:" + job.Version, Runtime: k.Runtime, CPUs: k.CPUs, MemoryMiB: k.MemoryMiB,
			Socket: k.PodmanSocket, Home: cfg.Docker.Home, Version: job.Version,
			RuntimeDir: h.RuntimeDir, User: h.User, UID: h.UID, StopGrace: job.StopGrace,
		}, h.Vars, nil)
		s.Path = filepath.Join(filepath.Dir(job.Bin), krunhelper.Program)
		iso = s
	}
	var errOut io.Writer = os.Stderr
	if job.OneWriter {
		errOut = out
	}
	if len(job.ViewPaths) == 0 {
		return iso.Run(ctx, p, isolator.Stdio{In: in, Out: out, Err: errOut})
	}
	// Before Run, as a harness must: the View records what the masks hold.
	v, err := embedView(iso, p)
	if err != nil {
		return 0, err
	}
	code, err := iso.Run(ctx, p, isolator.Stdio{In: in, Out: out, Err: os.Stderr})
	embedViewReport(v, job, out)
	return code, err
}

// serveRepeat is the harness of a job with Repeat set (see embedJob.Repeat).
func serveRepeat(job embedJob) int {
	debug.SetGCPercent(-1)
	fds := func() map[string]string {
		m := map[string]string{}
		ents, _ := os.ReadDir("/proc/self/fd")
		for _, e := range ents {
			m[e.Name()], _ = os.Readlink("/proc/self/fd/" + e.Name())
		}
		return m
	}
	var start map[string]string
	for k := 0; k <= job.Repeat; k++ {
		out := &embedLines{emit: func(l string) { fmt.Printf("out 0 %s\n", l) }}
		code, err := embedRun(context.Background(), job, 0, job.Dirs[0], nil, out)
		out.flush()
		if err != nil || code != 0 {
			fmt.Printf("result 0 %d run %d: %v\n", code, k, err)
			return 0
		}
		if k == 0 {
			start = fds()
		}
	}
	end := fds()
	var added []string
	for fd, target := range end {
		if _, ok := start[fd]; !ok {
			added = append(added, fd+"="+target)
		}
	}
	slices.Sort(added)
	fmt.Printf("fds 0 %d %d %s\n", len(start), len(end), strings.Join(added, " "))
	fmt.Printf("result 0 0 nil\n")
	return 0
}

// serveLibrary is the harness of a job with Library set (see embedJob.Library).
func serveLibrary(job embedJob) int {
	fail := func(err error) int {
		fmt.Printf("result 0 0 %s\n", strings.ReplaceAll(err.Error(), "\n", " "))
		return 0
	}
	ctx := context.Background()
	l, err := planner.LoadDir(job.Dirs[0], config.Flags{ConfigFile: job.Config}, os.Environ(), dsbtools.Default())
	if err != nil {
		return fail(err)
	}
	pr := l.Probe
	pr.Executable = func() (string, error) { return job.Bin, nil }
	p, _, err := planner.Build(l.Config, dsbtools.Default(), pr, planner.Request{})
	if err != nil {
		return fail(err)
	}
	p.Egress.Mode = "none" // the harness runs no proxy of its own
	s, err := bwrap.Begin(ctx, p, nil)
	if err != nil {
		return fail(err)
	}
	defer s.End()
	var held *tmpdir.Session
	if p.Tmp.Kind == "session" {
		if held, err = tmpdir.Acquire(p.Tmp.Dir); err != nil {
			return fail(err)
		}
		p.Tmp.Session = held.Name
	}
	release := func() {
		if held != nil {
			_ = held.Release()
			held = nil
		}
	}
	defer release()
	cmd, err := bwrap.Command(ctx, p, []string{"/bin/sh", "-c", job.Script})
	if err != nil {
		return fail(err)
	}
	cmd.Dir, cmd.Stdin, cmd.Stderr = p.Workdir, os.Stdin, os.Stderr
	out := &embedLines{emit: func(l string) { fmt.Printf("out 0 %s\n", l) }}
	cmd.Stdout = out
	tmp := "-"
	if held != nil {
		tmp = filepath.Join(p.Tmp.Dir, p.Tmp.Session)
	}
	fmt.Printf("out 0 paths %s %s %s\n", p.SandboxHome, p.StateDir, tmp)
	code := 0
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			return fail(err)
		}
		code = ee.ExitCode()
	}
	out.flush()
	fmt.Printf("out 0 exit %d\n", code)
	if err := s.Err(); err != nil {
		// The session killed the command: the disk reserve.
		fmt.Printf("out 0 stopped %s\n", strings.ReplaceAll(err.Error(), "\n", " "))
	}
	release() // as Run: the command's /tmp, then the session
	s.End()
	fmt.Println("result 0 0 nil")
	return 0
}

// embedView is the harness's file tools' View of p, which iso runs: the way
// architecture.md's "File tools" tells a harness to make it.
func embedView(iso isolator.Isolator, p *isolator.Plan) (*isolator.View, error) {
	return isolator.ViewOf(iso, p)
}

// embedViewReport writes, on out (as the run's lines), what v's Open lets the
// harness do with job's paths (see embedJob.ViewPaths).
func embedViewReport(v *isolator.View, job embedJob, out io.Writer) {
	class := func(err error) string {
		for _, c := range []error{isolator.ErrOutsideView, isolator.ErrMasked, isolator.ErrReadOnly, isolator.ErrNoHostPath, isolator.ErrInvalidPath, isolator.ErrSpecialFile} {
			if errors.Is(err, c) {
				return c.Error()
			}
		}
		return "other: " + err.Error()
	}
	for _, name := range job.ViewPaths {
		f, err := v.Open(name, os.O_RDONLY, 0)
		if err == nil {
			var b []byte
			b, err = io.ReadAll(f)
			f.Close()
			if err == nil {
				fmt.Fprintf(out, "view r %s ok %s\n", name, viewLine(b))
			}
		}
		if err != nil {
			fmt.Fprintf(out, "view r %s err %s\n", name, class(err))
		}
		f, err = v.Open(name, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			fmt.Fprintf(out, "view w %s err %s\n", name, class(err))
			continue
		}
		f.Close()
		fmt.Fprintf(out, "view w %s ok\n", name)
	}
}

// viewLine is content on one line, as embedViewScript's command prints it: its
// first 200 bytes, newlines as '|'.
func viewLine(b []byte) string {
	if len(b) > 200 {
		b = b[:200]
	}
	return strings.ReplaceAll(string(b), "\n", "|")
}

// embedLines splits what it is written into lines for emit (a harness streaming a
// run's output as it comes).
type embedLines struct {
	mu   sync.Mutex
	buf  []byte
	emit func(string)
}

func (w *embedLines) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, b...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			return len(b), nil
		}
		w.emit(string(w.buf[:i]))
		w.buf = w.buf[i+1:]
	}
}

func (w *embedLines) flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.buf) > 0 {
		w.emit(string(w.buf))
		w.buf = nil
	}
}

var (
	embedOnce    sync.Once
	embedBin     string
	embedVersion string
)

// embedHarness returns this test binary copied where the test user can run it, and
// the version of the devsandbox under test.
func embedHarness(t *testing.T) (string, string) {
	t.Helper()
	embedOnce.Do(func() {
		self, err := os.Executable()
		if err != nil {
			return
		}
		data, err := os.ReadFile(self)
		if err != nil {
			return
		}
		bin := filepath.Join(filepath.Dir(it.bin), "embed-harness")
		if os.WriteFile(bin, data, 0o755) != nil {
			return
		}
		out, err := exec.Command(it.bin, "version").Output()
		if err != nil {
			return
		}
		embedBin, embedVersion = bin, strings.TrimPrefix(strings.TrimSpace(string(out)), "devsandbox ")
	})
	if embedBin == "" {
		t.Fatal("could not install the embedding harness")
	}
	return embedBin, embedVersion
}

// embedProc is a started harness.
type embedProc struct {
	cmd    *exec.Cmd
	in     io.WriteCloser // the harness's stdin, for a Library job
	lines  *lineReader
	stderr bytes.Buffer
	ended  time.Time // see startedWithin
}

// startEmbed starts the harness for job as the test user, in root, the first
// project's scratch root (what it starts inherits that working directory: see
// assertNothingLeft), with its sandbox homes and state in root too (a prune sees
// only the test's own).
func startEmbed(t *testing.T, job embedJob, root string) *embedProc {
	t.Helper()
	bin, version := embedHarness(t)
	job.Bin, job.Version = it.bin, version
	enc, _ := json.Marshal(job)
	cmd := exec.Command(bin, "-test.run=^$")
	cmd.Dir = root
	cmd.Env = baseEnv(embedEnv+"="+string(enc), embedXDG(root)[0], embedXDG(root)[1])
	if job.Iso == "krun" {
		// XDG_DATA_HOME moves rootless podman's storage too, where the image is
		// not: the harness names the test user's storage, as the error of a run
		// that misses the image says to (see TestKrunMovedStorage).
		cmd.Env = append(cmd.Env, "XDG_RUNTIME_DIR="+runtimeDir(), "CONTAINERS_STORAGE_CONF="+userStorageConf(t))
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{}
	if it.asOther {
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: uint32(it.uid), Gid: uint32(it.gid), Groups: it.groups}
	}
	e := &embedProc{cmd: cmd}
	if job.Library {
		var err error
		if e.in, err = cmd.StdinPipe(); err != nil {
			t.Fatal(err)
		}
	}
	cmd.Stderr = &e.stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	e.lines = newLineReader(t, stdout)
	return e
}

// storageConf is the throwaway home's storage.conf (setupPodmanConfig): it names the
// test user's podman storage as rootless_storage_path.
var storageConf string

// userStorageConf returns storageConf, for runs whose XDG homes would move podman's
// storage away from the image (CONTAINERS_STORAGE_CONF: whatever XDG_CONFIG_HOME and
// XDG_DATA_HOME say).
func userStorageConf(t *testing.T) string {
	t.Helper()
	if storageConf == "" {
		t.Fatal("no storage.conf naming the test user's podman storage (setupPodman did not finish)")
	}
	return storageConf
}

// embedXDG are the data and state homes of the harnesses that run in root.
func embedXDG(root string) []string {
	return []string{"XDG_DATA_HOME=" + filepath.Join(root, "data"), "XDG_STATE_HOME=" + filepath.Join(root, "state")}
}

// results reads the harness's output to its end: each run's lines and its result
// (the harness's own lines, "usr1 I ...", go to outs[I] as "harness: usr1 ...").
func (e *embedProc) results(t *testing.T, within time.Duration) (outs map[int][]string, res map[int]string) {
	t.Helper()
	outs, res = map[int][]string{}, map[int]string{}
	deadline := time.After(within)
	for {
		select {
		case l, ok := <-e.lines.lines:
			if !ok {
				_ = e.cmd.Wait()
				return outs, res
			}
			f := strings.SplitN(l, " ", 3)
			if len(f) < 3 {
				t.Errorf("harness: unexpected line %q", l)
				continue
			}
			i, _ := strconv.Atoi(f[1])
			switch f[0] {
			case "out":
				outs[i] = append(outs[i], f[2])
			case "result":
				res[i] = f[2]
			case "usr1":
				outs[i] = append(outs[i], "harness: usr1 "+f[2])
			case "fds":
				outs[i] = append(outs[i], "harness: fds "+f[2])
			}
		case <-deadline:
			t.Fatalf("the harness did not finish within %s; stderr:\n%s", within, e.stderr.String())
		}
	}
}

// startedWithin waits until run 0 of e says "started", its output ends, or d passes,
// and puts the lines it read back in front of the rest, for results. From then on
// the output is read as it comes, and ended says when it ended (once results has
// seen the end).
func (e *embedProc) startedWithin(d time.Duration) {
	var read []string
	deadline := time.After(d)
	old := e.lines.lines
wait:
	for {
		select {
		case l, ok := <-old:
			if !ok {
				break wait
			}
			read = append(read, l)
			if l == "out 0 started" {
				break wait
			}
		case <-deadline:
			break wait
		}
	}
	lines := make(chan string, 64)
	go func() {
		for _, l := range read {
			lines <- l
		}
		var rest []string
		for l := range old {
			rest = append(rest, l)
		}
		e.ended = time.Now()
		for _, l := range rest {
			lines <- l
		}
		close(lines)
	}()
	e.lines = &lineReader{t: e.lines.t, lines: lines}
}

// embedIsolators are the isolators a harness embeds in process or through the stub.
func embedIsolators() []string {
	return slices.DeleteFunc(isolators(), func(iso string) bool { return iso != "bwrap" && iso != localDocker && iso != "krun" })
}

// A harness that embeds devsandbox: its runs stream their output and return their
// exit status; cancelling the context, a deadline, and a command that ignores SIGTERM
// each end the run within a bound, with an error saying why (errors.Is
// context.Canceled / DeadlineExceeded); several runs at once, of different projects
// and of the same one, keep their own output and status. After each, nothing of the
// runs is left (see assertNothingLeft).
func TestEmbedScenarios(t *testing.T) {
	// The command starts the session proxy first (a connection through it), so that
	// its process is among what must go.
	const start = `curl -s -o /dev/null -m 5 -x "$HTTPS_PROXY" http://127.0.0.1:9/ 2>/dev/null; echo started; `
	cases := []struct {
		name   string
		job    embedJob
		within time.Duration
		want   string // the result of run 0
		out    []string
	}{
		{"exit0", embedJob{Script: `echo hello; exit 0`}, time.Minute, "0 nil", []string{"hello"}},
		{"exit3", embedJob{Script: `echo hello; exit 3`}, time.Minute, "3 nil", []string{"hello"}},
		{"cancel", embedJob{Script: start + `sleep 1000; echo not-stopped`, CancelOnStart: true}, time.Minute, "143 canceled", []string{"started"}},
		// allowlist: pasta and its namespace's rules (bwrap), the firewall helper (docker).
		{"cancel-allowlist", embedJob{Script: `echo started; sleep 1000`, CancelOnStart: true, Egress: "allowlist"}, time.Minute, "143 canceled", []string{"started"}},
		// The command sees SIGTERM, on every isolator, and its own status is the run's.
		{"cancel-sees-sigterm", embedJob{Script: `trap "echo got-term; exit 7" TERM; echo started; sleep 1000 & wait`, CancelOnStart: true}, time.Minute, "7 canceled", []string{"started", "got-term"}},
		// SIGTERM is ignored: the sandbox is killed after the grace.
		{"ignores-sigterm", embedJob{Script: `trap "" TERM INT HUP; ` + start + `sleep 1000 & while :; do wait; done`, CancelOnStart: true, StopGrace: 2 * time.Second}, time.Minute, "137 canceled", []string{"started"}},
	}
	// The deadline case waits 8 s for its deadline. Its run on every isolator starts
	// here, before any other case, with a project and a harness of its own as every
	// case's; its subtests (deadline/<isolator>), after all the others, take the
	// results. The three waits overlap each other and the other cases' work instead
	// of adding about 8 s per isolator.
	deadline := embedJob{Script: start + `sleep 1000`, Deadline: 8 * time.Second}
	type earlyRun struct {
		p  *project
		e  *embedProc
		t0 time.Time
	}
	early := map[string]earlyRun{}
	for _, iso := range embedIsolators() {
		if !isolatorReady(iso) {
			continue // its subtests skip (fail in CI), as forEachIsolatorOf says
		}
		p := newProject(t)
		job := deadline
		job.Iso, job.Dirs = iso, []string{p.dir}
		early[iso] = earlyRun{p, startEmbed(t, job, p.root), time.Now()}
	}
	// Every deadline run has started (its command said so) before the other cases'
	// runs begin: started under 28 runs at once, one missed its 8 s deadline before
	// it printed anything. The lines read stay the run's.
	for _, r := range early {
		r.e.startedWithin(time.Minute - time.Since(r.t0))
	}
	if len(early) > 0 {
		t.Logf("deadline runs started; the other cases begin")
	}
	forEachIsolatorOf(t, embedIsolators(), func(t *testing.T, iso string) {
		// The cases run at once, each with a project and a harness of its own
		// (assertNothingLeft looks at that project only), mostly so that the stop
		// grace's 2 s of waiting overlaps the other cases' work. (t.Parallel would
		// hold them to -test.parallel, two at a time on a two-core machine.)
		var wg sync.WaitGroup
		for _, c := range cases {
			wg.Go(func() {
				t.Run(c.name, func(t *testing.T) {
					p := newProject(t)
					job := c.job
					job.Iso, job.Dirs = iso, []string{p.dir}
					t0 := time.Now()
					e := startEmbed(t, job, p.root)
					outs, res := e.results(t, c.within)
					if res[0] != c.want || !slices.Equal(outs[0], c.out) {
						t.Errorf("run: result %q, output %q; want %q, %q\nharness stderr:\n%s", res[0], outs[0], c.want, c.out, e.stderr.String())
					}
					t.Logf("%s: %s", c.name, time.Since(t0).Round(time.Millisecond))
					assertNothingLeft(t, iso, p.root, []*project{p}, false)
				})
			})
		}
		wg.Go(func() {
			t.Run("concurrent", func(t *testing.T) {
				a, b := newProject(t), newProject(t)
				job := embedJob{Iso: iso, Dirs: []string{a.dir, b.dir, a.dir, b.dir}, Script: `echo "run $1"; exit $1`}
				e := startEmbed(t, job, a.root)
				outs, res := e.results(t, 2*time.Minute)
				for i := range job.Dirs {
					if want := fmt.Sprintf("%d nil", i); res[i] != want || !slices.Equal(outs[i], []string{fmt.Sprintf("run %d", i)}) {
						t.Errorf("run %d: result %q, output %q; want %q\nharness stderr:\n%s", i, res[i], outs[i], want, e.stderr.String())
					}
				}
				assertNothingLeft(t, iso, a.root, []*project{a, b}, false)
			})
		})
		wg.Wait()
	})
	t.Run("deadline", func(t *testing.T) {
		forEachIsolatorOf(t, embedIsolators(), func(t *testing.T, iso string) {
			r, ok := early[iso]
			if !ok {
				t.Fatalf("no deadline run was started on %s", iso)
			}
			// The bound, a minute, counts from the run's start, as the other cases':
			// the output was read as it came (startedWithin), so a slow test does
			// not count against the run.
			outs, res := r.e.results(t, time.Minute)
			if want, out := "143 deadline", []string{"started"}; res[0] != want || !slices.Equal(outs[0], out) {
				t.Errorf("run: result %q, output %q; want %q, %q\nharness stderr:\n%s", res[0], outs[0], want, out, r.e.stderr.String())
			}
			if took := r.e.ended.Sub(r.t0); took > time.Minute {
				t.Errorf("the run with an 8 s deadline ended %s after its start; want within a minute", took.Round(time.Millisecond))
			}
			t.Logf("deadline: %s", r.e.ended.Sub(r.t0).Round(time.Millisecond))
			assertNothingLeft(t, iso, r.p.root, []*project{r.p}, false)
		})
	})
}

// Many runs at once, four in each of four processes, of the same projects: all run
// and keep their own output and status. Two races failed this before:
//   - podman's service reads the user's subordinate IDs (libsubid) for every keep-id
//     container it creates, and libsubid is not thread safe: podman 4.3.1 answered
//     creations at the same moment with "keep-id requires additional UIDs or GIDs" (a
//     run refused), or died of a SIGSEGV in subid_get_uid_ranges (every run on the
//     service failed) — four creations at once through its API crashed it;
//   - a session's proxy socket existed for a moment before it listened, and another
//     session's sweep of the socket directory removed it as a dead session's (the
//     proxy's chmod: "no such file or directory").
func TestEmbedManyAtOnce(t *testing.T) {
	isos := slices.DeleteFunc(embedIsolators(), func(iso string) bool { return iso != "krun" && iso != "bwrap" })
	forEachIsolatorOf(t, isos, func(t *testing.T, iso string) {
		ps := []*project{newProject(t), newProject(t), newProject(t), newProject(t)}
		job := embedJob{Iso: iso, Dirs: []string{ps[0].dir, ps[1].dir, ps[2].dir, ps[3].dir}, Script: `echo "run $1"; exit $1`}
		// Three bursts of sixteen runs: krun failed about one burst in three before.
		for burst := range 3 {
			var es []*embedProc
			for range 4 {
				es = append(es, startEmbed(t, job, ps[0].root))
			}
			for n, e := range es {
				outs, res := e.results(t, 3*time.Minute)
				for i := range job.Dirs {
					if want := fmt.Sprintf("%d nil", i); res[i] != want || !slices.Equal(outs[i], []string{fmt.Sprintf("run %d", i)}) {
						t.Errorf("burst %d, process %d, run %d: result %q, output %q; want %q\nharness stderr:\n%s", burst, n, i, res[i], outs[i], want, e.stderr.String())
					}
				}
			}
		}
		assertNothingLeft(t, iso, ps[0].root, ps, false)
	})
}

// The embedding process is SIGKILLed while its run's command runs: every process of
// the run ends by itself, no mount stays; the one thing a dead process cannot remove,
// its session /tmp (bwrap), goes with the next `devsandbox sandboxes prune`, which
// leaves the /tmp of a live session alone.
func TestEmbedKilled(t *testing.T) {
	forEachIsolatorOf(t, embedIsolators(), func(t *testing.T, iso string) {
		p := newProject(t)
		e := startEmbed(t, embedJob{Iso: iso, Dirs: []string{p.dir},
			Script: `curl -s -o /dev/null -m 5 -x "$HTTPS_PROXY" http://127.0.0.1:9/ 2>/dev/null; echo started; sleep 1000`}, p.root)
		e.lines.waitFor("out 0 started")
		if err := e.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_ = e.cmd.Wait()
		assertNothingLeft(t, iso, p.root, []*project{p}, true)
		if iso != "bwrap" {
			return
		}
		// A live session's /tmp next to the dead one's: prune removes only the latter.
		tmp := filepath.Join(p.root, "state/devsandbox", p.name(), "tmp")
		dead := sessionDirs(t, tmp)
		if len(dead) != 1 {
			t.Fatalf("session dirs after the kill: %v, want the killed run's", dead)
		}
		live := startEmbed(t, embedJob{Iso: iso, Dirs: []string{p.dir}, Script: `echo started; sleep 1000`}, p.root)
		live.lines.waitFor("out 0 started")
		// Prune removes what is over a minute old (a session dir is locked
		// microseconds after it is made): the killed run's is made older.
		for _, d := range sessionDirs(t, tmp) {
			old := time.Now().Add(-2 * time.Minute)
			if err := os.Chtimes(filepath.Join(tmp, d), old, old); err != nil {
				t.Fatal(err)
			}
		}
		// No engine: prune's docker part would touch the shared engine's objects of
		// other tests. It then fails saying so, after the host's part.
		r := run(t, p.dir, append(embedXDG(p.root), "DOCKER_HOST=unix://"+p.path("no-engine.sock")), "", "--config", p.noPodmanConfig(), "sandboxes", "prune")
		if want := "removed " + filepath.Join(tmp, dead[0]) + ": the session /tmp of a run that ended without removing it\n"; !strings.Contains(r.stdout, want) {
			t.Errorf("prune after the kill: %s\nwant the line %q", r, want)
		}
		left := sessionDirs(t, tmp)
		if len(left) != 1 || left[0] == dead[0] {
			t.Errorf("session dirs after prune: %v; want only the live run's (the killed run's was %s)", left, dead[0])
		}
		_ = live.cmd.Process.Kill()
		_ = live.cmd.Wait()
	})
}

// A harness with a SIGUSR1 handler of its own embeds a run (no signal forwarding
// asked for, the library's default): the signal it sends itself while the run's
// command runs reaches its handler, and not the command (which would print
// "got-usr1"); the command then reads what the harness writes on its stdin and
// exits 0. With the library subscribed to the signal, the command gets it too.
func TestEmbedOwnSignals(t *testing.T) {
	forEachIsolatorOf(t, embedIsolators(), func(t *testing.T, iso string) {
		p := newProject(t)
		e := startEmbed(t, embedJob{Iso: iso, Dirs: []string{p.dir}, OwnUSR1: true,
			Script: `trap "echo got-usr1" USR1; echo started; read x; echo "read $x"`}, p.root)
		outs, res := e.results(t, time.Minute)
		want := []string{"started", "harness: usr1 got", "read go"}
		if res[0] != "0 nil" || !slices.Equal(outs[0], want) {
			t.Errorf("run: result %q, output %q; want \"0 nil\", %q\nharness stderr:\n%s", res[0], outs[0], want, e.stderr.String())
		}
		assertNothingLeft(t, iso, p.root, []*project{p}, false)
	})
}

// A kept container (docker.keep_container) under cancel: the command gets SIGTERM
// (its trap reports it) and the run says it was cancelled; the kept container (and
// its companion and endpoint volume, egress mode proxy) stay, running, and nothing
// else of the run does; the next run uses the same container.
func TestEmbedKeptCancel(t *testing.T) {
	if !slices.Contains(embedIsolators(), localDocker) {
		t.Skip("docker is not among DEVSANDBOX_IT_ISOLATORS")
	}
	forEachIsolatorOf(t, []string{localDocker}, func(t *testing.T, iso string) {
		p := newProject(t)
		kept := []string{"devsandbox-" + p.name(), "devsandbox-" + p.name() + "-px", "devsandbox-" + p.name() + "-ep"}
		t.Cleanup(func() {
			for _, k := range kept {
				_ = dockerCmd(iso, "rm", "-f", "-v", k).Run()
				_ = dockerCmd(iso, "volume", "rm", "-f", k).Run()
			}
		})
		e := startEmbed(t, embedJob{Iso: iso, Dirs: []string{p.dir}, Keep: true, CancelOnStart: true,
			Script: `trap "echo got-term; exit 7" TERM; curl -s -o /dev/null -m 5 -x "$HTTPS_PROXY" http://127.0.0.1:9/ 2>/dev/null; echo started; sleep 1000 & wait`}, p.root)
		outs, res := e.results(t, time.Minute)
		if want := []string{"started", "got-term"}; res[0] != "7 canceled" || !slices.Equal(outs[0], want) {
			t.Errorf("run: result %q, output %q; want \"7 canceled\", %q\nharness stderr:\n%s", res[0], outs[0], want, e.stderr.String())
		}
		id := dockerAt(t, iso, "inspect", "--format", "{{.Id}} {{.State.Running}}", kept[0])
		if !strings.HasSuffix(id, " true") {
			t.Fatalf("the kept container after the cancelled run: %q, want it running", id)
		}
		assertNothingLeftBut(t, iso, p.root, []*project{p}, false, kept)

		e = startEmbed(t, embedJob{Iso: iso, Dirs: []string{p.dir}, Keep: true, Script: `echo again`}, p.root)
		outs, res = e.results(t, time.Minute)
		if res[0] != "0 nil" || !slices.Equal(outs[0], []string{"again"}) {
			t.Errorf("the next run: result %q, output %q\nharness stderr:\n%s", res[0], outs[0], e.stderr.String())
		}
		if again := dockerAt(t, iso, "inspect", "--format", "{{.Id}} {{.State.Running}}", kept[0]); again != id {
			t.Errorf("the next run's kept container: %q, want the same one, %q", again, id)
		}
		assertNothingLeftBut(t, iso, p.root, []*project{p}, false, kept)
	})
}

// sessionDirs lists the session /tmp dirs under tmp.
func sessionDirs(t *testing.T, tmp string) []string {
	t.Helper()
	ents, err := os.ReadDir(tmp)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

// assertNothingLeft fails unless nothing of the projects' runs is left, within a
// bound: no process (of any user) working in a project's scratch root, which every
// process a run starts on the host inherits from the harness and every sandboxed
// one has (the project); no mount below a root in the host's mount table; no
// session /tmp or socket in the state dirs (under root: embedXDG) (killed: the session /tmp of a SIGKILLed
// run is allowed, prune's to remove); for docker, no container of the projects and
// no volume but the content volumes runs keep; for krun, no podman container of the
// projects.
func assertNothingLeft(t *testing.T, iso, root string, ps []*project, killed bool) {
	t.Helper()
	assertNothingLeftBut(t, iso, root, ps, killed, nil)
}

// assertNothingLeftBut is assertNothingLeft with the docker containers and volumes
// named in kept allowed (a kept container, its companion, its endpoint volume), and
// the processes of the kept containers.
func assertNothingLeftBut(t *testing.T, iso, root string, ps []*project, killed bool, kept []string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	inKept := map[int]bool{}
	// The volumes a kept container mounts (an anchor's descriptor volume is a mount of
	// the project's directory on this host) stay mounted while it runs.
	var keptVolumes []string
	for _, k := range kept {
		if dockerCmd(iso, "inspect", "--type", "container", k).Run() == nil {
			for _, pid := range containerPids(t, iso, k) {
				inKept[pid] = true
			}
			out, _ := dockerCmd(iso, "inspect", "--type", "container", "--format", "{{range .Mounts}}{{if eq .Type \"volume\"}}{{.Name}} {{end}}{{end}}", k).Output()
			for _, v := range strings.Fields(string(out)) {
				keptVolumes = append(keptVolumes, "/volumes/"+v+"/_data ")
			}
		}
	}
	var procs []string
	for {
		procs = slices.DeleteFunc(procsIn(ps), func(l string) bool {
			pid, _ := strconv.Atoi(strings.Fields(l)[0])
			return inKept[pid]
		})
		if len(procs) == 0 || time.Now().After(deadline) {
			break
		}
		runtimeYield()
	}
	if len(procs) > 0 {
		t.Errorf("processes left 30s after the runs ended:\n%s", strings.Join(procs, "\n"))
	}
	for _, mi := range []string{"/proc/self/mountinfo", "/proc/1/mountinfo"} {
		b, err := os.ReadFile(mi)
		if err != nil {
			t.Fatal(err)
		}
		for l := range strings.Lines(string(b)) {
			if slices.ContainsFunc(keptVolumes, func(v string) bool { return strings.Contains(l, v) }) {
				continue
			}
			for _, p := range ps {
				if strings.Contains(l, p.root) {
					t.Errorf("mount left in %s: %s", mi, l)
				}
			}
		}
	}
	for _, p := range ps {
		state := filepath.Join(root, "state/devsandbox", p.name())
		if d := sessionDirs(t, filepath.Join(state, "tmp")); len(d) > 0 && !(killed && len(d) == 1) {
			t.Errorf("session /tmp dirs left in %s/tmp: %v", state, d)
		}
		if d := sessionDirs(t, filepath.Join(state, "sock")); len(d) > 0 {
			t.Errorf("sockets left in %s/sock: %v", state, d)
		}
	}
	if iso == "krun" {
		for _, p := range ps {
			for {
				cs := krunContainers(t, p, true)
				if len(cs) == 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Errorf("podman containers left: %v", cs)
					break
				}
				runtimeYield()
			}
		}
		return
	}
	if iso != localDocker {
		return
	}
	for _, p := range ps {
		label := "label=dev.devsandbox.project=" + strings.TrimPrefix(p.name(), filepath.Base(p.dir)+"-")
		for {
			cs := slices.DeleteFunc(strings.Fields(dockerAt(t, iso, "ps", "-a", "--format", "{{.Names}}", "--filter", label)),
				func(c string) bool { return slices.Contains(kept, c) })
			if len(cs) == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Errorf("containers left: %v", cs)
				break
			}
			runtimeYield()
		}
		for _, v := range strings.Fields(dockerAt(t, iso, "volume", "ls", "-q", "--filter", label)) {
			if slices.Contains(kept, v) {
				continue
			}
			if role := dockerAt(t, iso, "volume", "inspect", "--format", `{{index .Labels "dev.devsandbox.role"}}`, v); role != "content" {
				t.Errorf("volume left: %s (role %q)", v, role)
			}
		}
	}
}

// procsIn lists the processes whose working directory is in one of the projects'
// scratch roots, as "pid user cmdline".
func procsIn(ps []*project) []string {
	var out []string
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		cwd, err := os.Readlink(d + "/cwd")
		if err != nil {
			continue // gone, or a zombie (reaped by its parent)
		}
		for _, p := range ps {
			if cwd == p.root || strings.HasPrefix(cwd, p.root+"/") {
				cmdline, _ := os.ReadFile(d + "/cmdline")
				var st syscall.Stat_t
				_ = syscall.Stat(d, &st)
				out = append(out, fmt.Sprintf("%s uid %d: %s", filepath.Base(d), st.Uid, strings.ReplaceAll(string(cmdline), "\x00", " ")))
				break
			}
		}
	}
	return out
}

// Sixteen runs of one project at once (4 harness processes, 4 runs each): everything
// the project's runs share (its state directory, socket directory, session /tmp base,
// etc snapshot, mask-scan cache, audit log directory; for docker its home and content
// volumes and derived image; with keep_container the kept container, its companion and
// endpoint volume, created by whichever run comes first) must serve all of them. What
// TestEmbedManyAtOnce leaves out: docker, one-shot and with keep_container, and bwrap
// in allowlist mode (pasta and nft per session). (bwrap and krun in proxy mode: there,
// each of its projects has four runs at once.)
func TestEmbedOneProjectManyAtOnce(t *testing.T) {
	type variant struct {
		name, egress string
		keep         bool
	}
	variants := map[string][]variant{
		"bwrap":     {{name: "allowlist", egress: "allowlist"}},
		localDocker: {{name: "proxy"}, {name: "kept", keep: true}},
	}
	isos := slices.DeleteFunc(embedIsolators(), func(iso string) bool { return variants[iso] == nil })
	forEachIsolatorOf(t, isos, func(t *testing.T, iso string) {
		for _, v := range variants[iso] {
			t.Run(v.name, func(t *testing.T) {
				p := newProject(t)
				var kept []string
				if v.keep {
					kept = []string{"devsandbox-" + p.name(), "devsandbox-" + p.name() + "-px", "devsandbox-" + p.name() + "-ep"}
					t.Cleanup(func() {
						for _, k := range kept {
							_ = dockerCmd(iso, "rm", "-f", "-v", k).Run()
							_ = dockerCmd(iso, "volume", "rm", "-f", k).Run()
						}
					})
				}
				job := embedJob{Iso: iso, Dirs: []string{p.dir, p.dir, p.dir, p.dir}, Egress: v.egress, Keep: v.keep,
					Script: `curl -s -o /dev/null -m 5 -x "$HTTPS_PROXY" http://127.0.0.1:9/ 2>/dev/null; echo "run $1"; exit $1`}
				var es []*embedProc
				for range 4 {
					es = append(es, startEmbed(t, job, p.root))
				}
				for n, e := range es {
					outs, res := e.results(t, 3*time.Minute)
					for i := range job.Dirs {
						if want := fmt.Sprintf("%d nil", i); res[i] != want || !slices.Equal(outs[i], []string{fmt.Sprintf("run %d", i)}) {
							t.Errorf("process %d, run %d: result %q, output %q; want %q\nharness stderr:\n%s", n, i, res[i], outs[i], want, e.stderr.String())
						}
					}
				}
				assertNothingLeftBut(t, iso, p.root, []*project{p}, false, kept)
			})
		}
	})
}

// A library user that makes many docker runs, each with its View (which judges the
// engine on its pinned socket, as the run does), holds no more descriptors after
// them than after the first: each pinned engine socket is closed when its judgement
// or client is done (Address.Unpin), not left to a finalizer. The harness runs with
// the garbage collector off. On base each run left its pinned sockets open (O_PATH
// descriptors of /var/run/docker.sock).
func TestEmbedRunsCloseEngineSockets(t *testing.T) {
	forEachIsolatorOf(t, []string{localDocker}, func(t *testing.T, iso string) {
		p := newProject(t)
		p.write("seen.txt", "x")
		const repeat = 4
		job := embedJob{Iso: iso, Dirs: []string{p.dir}, Script: `exit 0`, Repeat: repeat, ViewPaths: []string{"seen.txt"}}
		e := startEmbed(t, job, p.root)
		outs, res := e.results(t, 3*time.Minute)
		if res[0] != "0 nil" {
			t.Fatalf("the runs: %q %q\nharness stderr:\n%s", res[0], outs[0], e.stderr.String())
		}
		var report string
		for _, l := range outs[0] {
			if r, ok := strings.CutPrefix(l, "harness: fds "); ok {
				report = r
			}
		}
		f := strings.SplitN(report, " ", 3)
		if len(f) < 2 {
			t.Fatalf("no descriptor count from the harness: %q", outs[0])
		}
		if f[0] != f[1] {
			t.Errorf("after %d more docker runs, the library process holds %s descriptors, after the first %s; new: %s", repeat, f[1], f[0], strings.Join(f[2:], ""))
		}
		assertNothingLeft(t, iso, p.root, []*project{p}, false)
	})
}
