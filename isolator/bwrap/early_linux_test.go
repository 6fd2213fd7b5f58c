package bwrap

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/devsandbox/devsandbox/isolator/bwrap/internal/prestart"
	"github.com/devsandbox/devsandbox/syscalls"
)

func requireBwrap(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("bwrap")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("bwrap is required in CI")
		}
		t.Skip("bwrap not installed")
	}
	return bin
}

// earlyHost is a throwaway host for an early start: a state root with a project's
// tmp/, and a directory standing for a home with a file, a private file and a
// directory in it.
type earlyHost struct {
	state, tmpBase, home string
}

func newEarlyHost(t *testing.T) earlyHost {
	d := t.TempDir()
	h := earlyHost{state: filepath.Join(d, "state"), home: filepath.Join(d, "home")}
	h.tmpBase = filepath.Join(h.state, "app-1", "tmp")
	for _, p := range []string{h.tmpBase, filepath.Join(h.home, "dir")} {
		if err := os.MkdirAll(p, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(h.home, ".profile"), []byte("keep\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(h.home, "secret"), []byte("key\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return h
}

// listing is the home's names, modes, link targets and contents.
func (h earlyHost) listing(t *testing.T) string {
	var b strings.Builder
	err := filepath.Walk(h.home, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		b.WriteString(p + " " + fi.Mode().String())
		switch {
		case fi.Mode()&os.ModeSymlink != 0:
			l, _ := os.Readlink(p)
			b.WriteString(" -> " + l)
		case fi.Mode().IsRegular():
			c, _ := os.ReadFile(p)
			b.WriteString(" " + strconv.Quote(string(c)))
		}
		b.WriteByte('\n')
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// record is a record of a launch that binds the home read-write at /home/u, places
// the file of fd 6 in /run, and runs cmd.
func (h earlyHost) record(bin string, cmd ...string) *prestart.Record {
	argv := []string{"bwrap", "--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL",
		"--unshare-user", "--disable-userns",
		"--ro-bind-try", "/usr", "/usr", "--symlink", "usr/bin", "/bin", "--symlink", "usr/lib", "/lib",
		"--symlink", "usr/lib64", "/lib64",
		"--dev", "/dev", "--proc", "/proc", "--tmpfs", "/run",
		"--bind", h.tmpBase + "/" + prestart.SessionPlaceholder, "/tmp",
		"--bind-fd", "5", "/home/u",
		"--perms", "0444", "--file", "6", "/run/x",
		"--remount-ro", "/", "--seccomp", "7", "--as-pid-1", "--chdir", "/", "--"}
	return &prestart.Record{
		Version: prestart.Version, Key: strings.Repeat("ab", 16), Bwrap: bin, TmpBase: h.tmpBase,
		Argv: append(argv, cmd...),
		Env: []prestart.Env{{Name: "PATH", Kind: prestart.EnvPlain, Value: "/usr/bin:/bin"},
			{Name: "API_KEY", Kind: prestart.EnvSecret, Source: "HOST_API_KEY"}},
		Files: []prestart.File{{FD: 5, Kind: prestart.KindSource, Path: h.home}, {FD: 6, Kind: prestart.KindData},
			{FD: 7, Kind: prestart.KindSeccomp}},
	}
}

func hostEnv(name string) (string, bool) {
	if name == "HOST_API_KEY" {
		return "s3cr3t-value", true
	}
	return "", false
}

func seccompProgram(t *testing.T) []byte {
	arch, err := syscalls.Native()
	if err != nil {
		t.Skip(err)
	}
	prog, err := syscalls.Seccomp(syscalls.Policy{}, arch)
	if err != nil {
		t.Fatal(err)
	}
	return prog
}

// A forged record whose bwrap would change the host before its block (bubblewrap
// 0.8.0 truncates a --file destination, applies --chmod, --symlink and --dir through
// a read-write bind before it reads --block-fd) is refused before anything starts,
// and the host is as it was. The control runs bubblewrap itself with each forged argv
// to show that it does change the host.
func TestEarlyStartForgedRecordHostUntouched(t *testing.T) {
	bin := requireBwrap(t)
	attacks := map[string][]string{
		"--file truncates":  {"--perms", "0444", "--file", "8", "/mnt/.profile"},
		"--chmod":           {"--chmod", "0777", "/mnt/secret"},
		"--symlink planted": {"--symlink", "/etc/passwd", "/mnt/planted"},
		"--dir planted":     {"--dir", "/mnt/dir/planted"},
	}
	for name, ops := range attacks {
		t.Run(name, func(t *testing.T) {
			forged := func(h earlyHost) *prestart.Record {
				r := h.record(bin, "/bin/true")
				i := slices.Index(r.Argv, "--remount-ro")
				r.Argv = slices.Insert(r.Argv, i, append([]string{"--bind-fd", "9", "/mnt"}, ops...)...)
				if slices.Contains(ops, "--file") {
					r.Files = append(r.Files, prestart.File{FD: 8, Kind: prestart.KindData})
				}
				r.Files = append(r.Files, prestart.File{FD: 9, Kind: prestart.KindSource, Path: h.home})
				return r
			}

			control := newEarlyHost(t)
			before := control.listing(t)
			runDirectly(t, forged(control))
			if control.listing(t) == before {
				t.Fatalf("control: bubblewrap left the host as it was; the attack shows nothing:\n%s", before)
			}

			h := newEarlyHost(t)
			before = h.listing(t)
			e, err := startEarly(forged(h), h.state, hostEnv, nil, [3]*os.File{})
			if err == nil {
				_ = e.abandon()
				t.Fatal("the forged record started bwrap")
			}
			if !errors.Is(err, prestart.ErrUnsafe) {
				t.Fatalf("startEarly = %v, want ErrUnsafe", err)
			}
			if after := h.listing(t); after != before {
				t.Errorf("the host changed:\n%s\nwas\n%s", after, before)
			}
			if left, _ := os.ReadDir(h.tmpBase); len(left) > 0 {
				t.Errorf("session /tmp made for a refused record: %v", left)
			}
		})
	}
}

// runDirectly runs bubblewrap with r's argv as it is, its descriptors given as
// files of the home (sources) and empty pipes (data): what an early start without
// the vetting would do before its block.
func runDirectly(t *testing.T, r *prestart.Record) {
	var files []*os.File
	for fd := 3; fd <= r.Files[len(r.Files)-1].FD; fd++ {
		files = append(files, nil)
	}
	for _, f := range r.Files {
		if f.Kind == prestart.KindSource {
			src, err := os.Open(f.Path)
			if err != nil {
				t.Fatal(err)
			}
			defer src.Close()
			files[f.FD-3] = src
			continue
		}
		rd, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		w.Close() // end-of-file: an empty file, an empty (refused) filter
		defer rd.Close()
		files[f.FD-3] = rd
	}
	argv := slices.Clone(r.Argv[1:])
	sess := filepath.Join(r.TmpBase, "control")
	if err := os.Mkdir(sess, 0o700); err != nil {
		t.Fatal(err)
	}
	argv[slices.Index(argv, r.TmpBase+"/"+prestart.SessionPlaceholder)] = sess
	cmd := exec.Command(r.Bwrap, argv...)
	cmd.ExtraFiles = files
	out, _ := cmd.CombinedOutput() // bwrap stops at the empty filter, after its mounts
	t.Logf("control: bwrap: %s", bytes.TrimSpace(out))
}

// A record devsandbox writes starts bwrap, which waits: the command does not run
// until release, and then runs with the data written at release and the secret in
// its environment, never in bwrap's argv. The data is written before the block's
// byte when it fits in the pipe (pipeMin), else beside it: both reach the command.
func TestEarlyStartRelease(t *testing.T) {
	for _, content := range []string{"fresh content\n", strings.Repeat("more than a pipe holds ", 10000) + "\n"} {
		t.Run(strconv.Itoa(len(content)), func(t *testing.T) { testEarlyStartRelease(t, content) })
	}
}

func testEarlyStartRelease(t *testing.T, content string) {
	bin := requireBwrap(t)
	h := newEarlyHost(t)
	r := h.record(bin, "/bin/sh", "-c", `cat /run/x; echo "$API_KEY"; echo ran > /home/u/ran`)
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer outR.Close()
	e, err := startEarly(r, h.state, hostEnv, nil, [3]*os.File{nil, outW, outW})
	outW.Close()
	if err != nil {
		t.Fatal(err)
	}
	// The parent learns of the exec before the kernel has set the new argv up
	// (the close-on-exec descriptors close first): read until it is there.
	var cmdline []byte
	for deadline := time.Now().Add(10 * time.Second); len(cmdline) == 0; time.Sleep(time.Millisecond) {
		if cmdline, err = os.ReadFile("/proc/" + strconv.Itoa(e.proc.pid) + "/cmdline"); err != nil || time.Now().After(deadline) {
			t.Fatalf("bwrap's argv: %q, %v", cmdline, err)
		}
	}
	if bytes.Contains(cmdline, []byte("s3cr3t-value")) {
		t.Errorf("the secret's value is in bwrap's argv: %q", cmdline)
	}
	if !bytes.Contains(cmdline, []byte("--block-fd\x008\x00")) {
		t.Errorf("bwrap's argv has no --block-fd 8: %q", cmdline)
	}
	if _, err := os.Stat(filepath.Join(h.home, "ran")); err == nil {
		t.Fatal("the command ran before the release")
	}
	if err := e.release(map[int][]byte{6: []byte(content), 7: seccompProgram(t)}); err != nil {
		t.Fatal(err)
	}
	out, _ := io.ReadAll(outR)
	ws, err := e.proc.wait()
	e.proc = nil
	if err != nil || ws.ExitStatus() != 0 {
		t.Fatalf("bwrap: %v, status %v; output %q", err, ws, out)
	}
	if string(out) != content+"s3cr3t-value\n" {
		t.Errorf("output %.200q (%d bytes)", out, len(out))
	}
	sess := e.launch.Session
	if err := e.abandon(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(sess); !os.IsNotExist(err) {
		t.Errorf("session /tmp %s left: %v", sess, err)
	}
}

// The caller's signal subscription is waited for (subscribed) after the record's
// checks and right before bwrap starts, once: not when the record is refused, and
// never after a child but the group's guard exists (a ^C before the subscription is
// in effect must find no bwrap to orphan; the guard, alone in its group then, ends
// itself at its stdin's end). A refused record starts nothing.
func TestEarlyStartSubscribedFirst(t *testing.T) {
	bin := requireBwrap(t)
	h := newEarlyHost(t)
	calls := 0
	subscribed := func() {
		calls++
		if kids := childrenBut(t); kids != "" {
			t.Errorf("a child existed before the subscription was waited for: %s", kids)
		}
	}
	bad := h.record(bin, "/bin/true")
	bad.Argv = append(bad.Argv[:1], append([]string{"--bind", "/", "/mnt"}, bad.Argv[1:]...)...)
	if e, err := startEarly(bad, h.state, hostEnv, subscribed, [3]*os.File{}); !errors.Is(err, prestart.ErrUnsafe) {
		if err == nil {
			_ = e.abandon()
		}
		t.Fatalf("a record with a host bind: %v, want ErrUnsafe", err)
	}
	if calls != 0 {
		t.Fatalf("the subscription was waited for %d times for a refused record", calls)
	}
	if kids := children(t); kids != "" {
		t.Fatalf("a refused record left children: %s", kids)
	}
	e, err := startEarly(h.record(bin, "/bin/true"), h.state, hostEnv, subscribed, [3]*os.File{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = e.abandon() }()
	if calls != 1 {
		t.Fatalf("the subscription was waited for %d times, want once", calls)
	}
	if !strings.Contains(children(t), strconv.Itoa(e.proc.pid)) {
		t.Errorf("bwrap (%d) is not a child after the start: %q", e.proc.pid, children(t))
	}
}

// childrenBut lists this process's children (children) but the guards of process
// groups being started (startGuard, beside the caller): this binary not exec'd yet,
// or the guard's shell leading a group of its own (its argv is not there yet while
// it execs).
func childrenBut(t *testing.T) string {
	t.Helper()
	self, err := os.Readlink("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	shell, err := filepath.EvalSymlinks(guardShell)
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, pid := range strings.Fields(children(t)) {
		exe, _ := os.Readlink("/proc/" + pid + "/exe")
		stat, _ := os.ReadFile("/proc/" + pid + "/stat")
		if exe == self || (exe == shell && strconv.Itoa(procGroup(stat)) == pid) {
			continue
		}
		left = append(left, pid)
	}
	return strings.Join(left, " ")
}

// children lists this process's children, all threads' (/proc/self/task/*/children).
func children(t *testing.T) string {
	t.Helper()
	tasks, err := filepath.Glob("/proc/self/task/*/children")
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, p := range tasks {
		c, err := os.ReadFile(p)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
		b.Write(c)
	}
	return strings.TrimSpace(b.String())
}

// Abandoned (a mismatch, an interrupt), the early bwrap leaves nothing: no process
// of its group, no session /tmp, the command never run.
func TestEarlyStartAbandon(t *testing.T) {
	bin := requireBwrap(t)
	h := newEarlyHost(t)
	r := h.record(bin, "/bin/sh", "-c", "echo ran > /home/u/ran")
	e, err := startEarly(r, h.state, hostEnv, nil, [3]*os.File{})
	if err != nil {
		t.Fatal(err)
	}
	pgid, sess := e.proc.pgid, e.launch.Session
	// bwrap's child exists once it cloned: the state an abandonment must clean
	// (the group: the guard, bwrap, its child).
	deadline := time.Now().Add(10 * time.Second)
	for groupSize(t, pgid) < 3 {
		if time.Now().After(deadline) {
			t.Fatal("bwrap's child never appeared")
		}
		time.Sleep(time.Millisecond)
	}
	start := time.Now()
	if err := e.abandon(); err != nil {
		t.Fatal(err)
	}
	t.Logf("abandoned in %v", time.Since(start))
	if n := liveInGroup(t, pgid); n > 0 {
		t.Errorf("%d processes of the early bwrap's group are left running", n)
	}
	if _, err := os.Stat(sess); !os.IsNotExist(err) {
		t.Errorf("session /tmp %s left: %v", sess, err)
	}
	if _, err := os.Stat(filepath.Join(h.home, "ran")); err == nil {
		t.Error("the record's command ran")
	}
}

// groupSize counts the processes of process group pgid.
func groupSize(t *testing.T, pgid int) int { return countGroup(t, pgid, false) }

// liveInGroup counts those that have not exited (a zombie, which its new parent has
// not reaped yet, holds no mount, namespace or descriptor).
func liveInGroup(t *testing.T, pgid int) int { return countGroup(t, pgid, true) }

func countGroup(t *testing.T, pgid int, live bool) int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, d := range ents {
		if _, err := strconv.Atoi(d.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + d.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp ...: after the last ')'.
		f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
		if len(f) > 2 && f[2] == strconv.Itoa(pgid) && !(live && f[0] == "Z") {
			n++
		}
	}
	return n
}

// A content the record holds (a generated file, no secret) is in bwrap's pipe before
// bwrap starts, whole: the release writes only the filter (and the pipes of the
// contents not recorded), and the command reads the recorded bytes. The early
// start's launch carries them for Compare, and a content larger than a pipe's
// capacity is not read from a record.
func TestEarlyStartRecordedContent(t *testing.T) {
	bin := requireBwrap(t)
	h := newEarlyHost(t)
	const recorded = "# Generated by devsandbox\nHost *\n"
	r := h.record(bin, "/bin/sh", "-c", `cat /run/x; echo "$API_KEY"`)
	r.Files[1] = prestart.File{FD: 6, Kind: prestart.KindContent, Content: []byte(recorded)}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer outR.Close()
	e, err := startEarly(r, h.state, hostEnv, nil, [3]*os.File{nil, outW, outW})
	outW.Close()
	if err != nil {
		t.Fatal(err)
	}
	if got := e.launch.FDs[1]; got.Kind != prestart.KindContent || string(got.Content) != recorded {
		t.Errorf("the early launch's descriptor 6 is %+v, want the recorded content", got)
	}
	if len(e.pipes) != 1 || e.pipes[7] == nil {
		t.Errorf("pipes left to write at release: %v, want the filter's alone", e.pipes)
	}
	if err := e.release(map[int][]byte{7: seccompProgram(t)}); err != nil {
		t.Fatal(err)
	}
	out, _ := io.ReadAll(outR)
	ws, err := e.proc.wait()
	e.proc = nil
	if err != nil || ws.ExitStatus() != 0 {
		t.Fatalf("bwrap: %v, status %v; output %q", err, ws, out)
	}
	if string(out) != recorded+"s3cr3t-value\n" {
		t.Errorf("output %q", out)
	}
	if err := e.abandon(); err != nil {
		t.Fatal(err)
	}

	r.Files[1].Content = bytes.Repeat([]byte("x"), prestart.MaxContent+1)
	if e, err := startEarly(r, h.state, hostEnv, nil, [3]*os.File{}); !errors.Is(err, prestart.ErrRecord) {
		if e != nil {
			_ = e.abandon()
		}
		t.Errorf("a content of %d bytes: %v, want ErrRecord", prestart.MaxContent+1, err)
	}
}

// BenchmarkStartEarlyNoRecord is what a launch with no record of its own pays before
// the configuration (the terminal checks, the key, one failed open): the path of
// every launch once sandbox.early_start = false removed the records.
func BenchmarkStartEarlyNoRecord(b *testing.B) {
	root := b.TempDir()
	if err := os.Mkdir(filepath.Join(root, "prestart"), 0o700); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if e := StartEarly(root, 1000, "/home/u/src/app", []string{"--", "true"}, hostEnv, true, nil); e.Started() {
			b.Fatal("started without a record")
		}
	}
}
