package bwrap

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/isolator/bwrap/internal/prestart"
	"github.com/devsandbox/devsandbox/isolator/internal/jobstop"
	"github.com/devsandbox/devsandbox/isolator/sandboxinit/wire"
	"github.com/devsandbox/devsandbox/isolator/tmpdir"
	"github.com/devsandbox/devsandbox/isolator/tty"
)

// earlyStart is bwrap started from a launch record before the Plan exists, stopped
// at its --block-fd: its namespaces and mounts made, no process of the sandbox run
// (its pid 1 is bwrap's own child, blocked in a read), no syscall filter read. It is
// either released, once the fresh rendering compared equal (release), or abandoned
// (abandon): killed with its child, reaped, its session /tmp removed.
type earlyStart struct {
	// launch is what bwrap consumed, for prestart.Compare.
	launch prestart.Launch
	proc   *child
	ready  *readyPair
	sess   *tmpdir.Session
	// pipes are the write ends of the data and seccomp descriptors, by number:
	// written only at release, with the fresh plan's contents.
	pipes map[int]*os.File
	block *os.File
	// master is the pty's master when bwrap was started on the slave
	// (startEarlyPty, an interactive run): Run relays the user's terminal to it
	// once the launch is adopted; closed when it is abandoned.
	master *os.File
	// std are devsandbox's standard descriptors at the start, and shape which of
	// them were terminals: Run adopts the start only for the same descriptors,
	// terminals alike (sameTerminals).
	std   [3]*os.File
	shape [3]bool
	// outs are the ptys put before output terminals in a run that relays none
	// (startEarlyTerminals, as plainTerminals), bwrap's stdout and stderr: not
	// copied until Run starts their filters at adoption, closed when abandoned.
	outs plainOutputs
	// in is stdin's replacement when it is a terminal in a run that relays none
	// (startEarlyTerminals, stdinTerminal): the controlling terminal read-only, or
	// /dev/null in the background. restoreIn puts back the terminal's state saved
	// then and closes in: Run's, deferred, once adopted; abandon's otherwise.
	in        *os.File
	restoreIn func()
}

// startEarlyTerminals is startEarly for a run that relays no terminal, yet whose
// stdin, stdout or stderr (std; term says which) is one: bwrap gets what Run's
// ordinary path gives the command there, made now, never the user's terminal. A
// stdin terminal is replaced by stdinTerminal's (this session's controlling terminal
// opened read-only, its state saved to restore after the run; /dev/null when
// devsandbox is in its background), and must be the controlling terminal; each
// output terminal by a pty of its own (openPlainTerminals), whose filter Run starts
// at adoption with the configuration's options. Until then nothing is copied: bwrap
// writes nothing before its release (an abandoned start's messages are dropped).
func startEarlyTerminals(rec *prestart.Record, stateRoot string, lookup func(string) (string, bool), subscribed func(), std [3]*os.File, term [3]bool) (*earlyStart, error) {
	in, restoreIn := std[0], func() {}
	if term[0] {
		warned := false
		f, restore, err := stdinTerminal(std[0], func(string, ...any) { warned = true })
		if err != nil {
			return nil, err
		}
		if warned { // not this session's controlling terminal (StartEarly checks it first)
			restore()
			return nil, fmt.Errorf("%w: stdin is a terminal that is not this session's controlling terminal", prestart.ErrMismatch)
		}
		in, restoreIn = f, restore
	}
	outs, files, slaves, err := openPlainTerminals([3]*os.File{in, std[1], std[2]})
	if err != nil {
		restoreIn()
		return nil, err
	}
	e, err := startEarly(rec, stateRoot, lookup, subscribed, files)
	closeFiles(slaves) // bwrap holds them
	if err != nil {
		_ = outs.close()
		restoreIn()
		return nil, err
	}
	e.outs = outs
	if term[0] {
		e.in, e.restoreIn = in, restoreIn
	}
	return e, nil
}

// sameTerminals reports whether stdio, Run's, are the descriptors the early start
// got (std), each a terminal as it was then, and a stdin terminal the start
// replaced still this session's controlling terminal with devsandbox in its
// foreground (a read-only /dev/tty) or background (/dev/null) as then; else why not.
// A job moved between the two between the start and Run would otherwise keep what
// the other gets.
func (s *earlyStart) sameTerminals(stdio isolator.Stdio) error {
	out, _ := stdio.Out.(*os.File)
	errf, _ := stdio.Err.(*os.File)
	for i, f := range [3]*os.File{stdio.In, out, errf} {
		if f != s.std[i] {
			return fmt.Errorf("%w: the run's standard descriptors are not the ones the early bwrap was started with", prestart.ErrMismatch)
		}
		if f != nil && tty.IsTerminal(f.Fd()) != s.shape[i] {
			return fmt.Errorf("%w: descriptor %d is a terminal at the start and not now, or the reverse", prestart.ErrMismatch, i)
		}
	}
	if s.restoreIn == nil {
		return nil
	}
	ctty, background := jobstop.Terminal(stdio.In)
	if ctty == nil {
		return fmt.Errorf("%w: stdin is no longer this session's controlling terminal", prestart.ErrMismatch)
	}
	ctty.Close()
	if background != (s.in.Name() == os.DevNull) {
		return fmt.Errorf("%w: devsandbox moved between the terminal's foreground and background since the early start", prestart.ErrMismatch)
	}
	return nil
}

// startEarlyPty is startEarly for an interactive run: bwrap's stdin, stdout and
// stderr are the slave of a new pty (tty.Open), as Run gives them in an interactive
// run, never the user's terminal; the master is kept for Run's relay. The user's
// terminal is not touched (its modes, its size: the relay sets them at adoption).
func startEarlyPty(rec *prestart.Record, stateRoot string, lookup func(string) (string, bool), subscribed func()) (*earlyStart, error) {
	master, slave, err := tty.Open()
	if err != nil {
		return nil, fmt.Errorf("allocating a terminal for the early bwrap: %w", err)
	}
	e, err := startEarly(rec, stateRoot, lookup, subscribed, [3]*os.File{slave, slave, slave})
	slave.Close() // bwrap holds it; the master reads EIO once the sandbox's copies close
	if err != nil {
		master.Close()
		return nil, err
	}
	e.master = master
	return e, nil
}

// startEarly starts bwrap from rec. Before it starts anything it vets the record
// (prestart.Vet, against stateRoot, with the sources opened as descriptors, no link
// followed), and the session /tmp's directory must exist as a private directory of
// the user's (it is not created); then it makes a session /tmp there, and starts
// bwrap with the record's argv and --block-fd, in a process group of its own (its
// child stays in it until its setsid, after the block), SIGKILLed should devsandbox
// die. lookup reads the host's variables the record names. subscribed, when not nil,
// is called last before bwrap is started (StartEarly). stdio are bwrap's.
func startEarly(rec *prestart.Record, stateRoot string, lookup func(string) (string, bool), subscribed func(), stdio [3]*os.File) (_ *earlyStart, err error) {
	e := &earlyStart{pipes: map[int]*os.File{}}
	var guard *guardStart // begun once the record passed its checks
	var childEnds []*os.File
	sources := map[int]*os.File{}
	defer func() {
		guard.drop() // not taken: bwrap was not started
		for _, f := range childEnds {
			f.Close()
		}
		for _, f := range sources {
			f.Close()
		}
		if err != nil {
			_ = e.abandon()
		}
	}()
	extra := map[int]*os.File{}
	maxFD := StatusFD
	for _, f := range rec.Files {
		fd := prestart.FD{FD: f.FD, Kind: f.Kind}
		switch f.Kind {
		case prestart.KindSource:
			src, id, err := prestart.OpenSource(f.Path)
			if err != nil {
				return nil, err
			}
			sources[f.FD], extra[f.FD], fd.ID = src, src, id
		case prestart.KindContent:
			// The recorded content, whole and closed before bwrap starts (it fits a new
			// pipe: validate bounds it), so bwrap reads it without waiting for the
			// plan; what it got is compared with the fresh plan's (prestart.Compare).
			r, err := contentPipe(f.Content)
			if err != nil {
				return nil, err
			}
			childEnds = append(childEnds, r)
			extra[f.FD], fd.Content = r, f.Content
		default:
			r, w, err := os.Pipe()
			if err != nil {
				return nil, err
			}
			childEnds = append(childEnds, r)
			extra[f.FD], e.pipes[f.FD] = r, w
		}
		e.launch.FDs = append(e.launch.FDs, fd)
		maxFD = max(maxFD, f.FD)
	}
	if err := prestart.Vet(rec, prestart.Expect{StateRoot: stateRoot}, prestart.HostFS{Sources: sources}); err != nil {
		return nil, err
	}
	// The guard of bwrap's group starts now, its fork and its exec of the shell
	// beside the session /tmp, the descriptors and the wait for the signal
	// subscription: bwrap's start, the launch's critical path, then only takes it.
	// It is no bwrap: a devsandbox killed before bwrap's start leaves it alone in
	// its group, which it ends at its stdin's end.
	guard = beginGuard()
	env, err := rec.Environ(lookup)
	if err != nil {
		return nil, err
	}
	// As childEnv gives it to bwrap: a variable of the host's loader renamed, for the
	// init to name back. bwrap runs on the host, before any namespace.
	env = wire.HostSafeEnv(env)
	if rec.TmpBase != "" {
		var st unix.Stat_t
		if err := unix.Lstat(rec.TmpBase, &st); err != nil {
			return nil, fmt.Errorf("%w: the session /tmp's directory: %w", prestart.ErrUnsafe, err)
		}
		if st.Mode&unix.S_IFMT != unix.S_IFDIR || int(st.Uid) != os.Geteuid() || st.Mode&0o077 != 0 {
			return nil, fmt.Errorf("%w: %s is not a private directory of yours", prestart.ErrUnsafe, rec.TmpBase)
		}
		if e.sess, err = tmpdir.Acquire(rec.TmpBase); err != nil {
			return nil, err
		}
		e.launch.Session = e.sess.Path
	}
	argv := recordArgv(rec, e.launch.Session)
	e.launch.Path, e.launch.Argv, e.launch.Env = rec.Bwrap, argv, env
	if e.ready, err = newReadyPair(); err != nil {
		return nil, err
	}
	childEnds = append(childEnds, e.ready.child)
	blockR, blockW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	childEnds = append(childEnds, blockR)
	e.block = blockW
	blockFD := maxFD + 1
	extra[blockFD] = blockR
	files := make([]*os.File, blockFD-2)
	files[0] = e.ready.child // ReadyFD; StatusFD stays closed: no prologue
	for fd, f := range extra {
		files[fd-3] = f
	}
	started := append([]string{argv[0], "--block-fd", strconv.Itoa(blockFD)}, argv[1:]...)
	attr := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if subscribed != nil {
		subscribed()
	}
	if e.proc, err = startGuarded(rec.Bwrap, started, env, &childStdio{files: stdio}, files, attr, guard); err != nil {
		return nil, fmt.Errorf("starting bwrap early: %w", err)
	}
	return e, nil
}

// contentPipe returns the read end of a new pipe that holds b, its write end closed:
// b is at most prestart.MaxContent, what a new pipe holds at the least.
func contentPipe(b []byte) (*os.File, error) {
	if len(b) > prestart.MaxContent {
		return nil, fmt.Errorf("%w: a recorded content of %d bytes", prestart.ErrRecord, len(b))
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	_, err = w.Write(b)
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		r.Close()
		return nil, fmt.Errorf("writing a recorded content for the early bwrap: %w", err)
	}
	return r, nil
}

// release lets bwrap go on: the data descriptors get the fresh contents (by
// descriptor number: every pipe must have one), the block its byte. It returns once
// every content is written (bwrap reads the data before its block, the filter after).
func (e *earlyStart) release(contents map[int][]byte) error {
	if len(contents) != len(e.pipes) {
		return fmt.Errorf("releasing the early bwrap: %d contents for %d descriptors", len(contents), len(e.pipes))
	}
	for fd := range e.pipes {
		if _, ok := contents[fd]; !ok {
			return fmt.Errorf("releasing the early bwrap: no content for descriptor %d", fd)
		}
	}
	// A content that fits in its pipe (new and empty: pipeMin) is written here,
	// before the block's byte, as Run fills them before an ordinary start: bwrap
	// reads the data during its setup, and a writer goroutine that the runtime
	// schedules after the block's byte kept it waiting on the pipe (measured at load
	// 8: bwrap got its data 1.2 ms after the release). A larger one is written
	// beside the release: bwrap reads it as it goes.
	errc := make(chan error, len(e.pipes))
	write := func(w *os.File, b []byte) {
		_, err := w.Write(b)
		if cerr := w.Close(); err == nil {
			err = cerr
		}
		errc <- err
	}
	for fd, w := range e.pipes {
		if b := contents[fd]; len(b) <= pipeMin {
			write(w, b)
		} else {
			go write(w, b)
		}
	}
	e.pipes = nil
	_, err := e.block.Write([]byte{0})
	e.block.Close()
	e.block = nil
	for range cap(errc) {
		if werr := <-errc; err == nil {
			err = werr
		}
	}
	if err != nil {
		return fmt.Errorf("releasing the early bwrap: %w", err)
	}
	return nil
}

// abandon kills bwrap and its child (the process group: the child's setsid comes
// after the block), reaps bwrap, waits until no process of the group is left,
// closes every descriptor and removes the session /tmp. The block is closed only
// after the kill: bwrap reads end-of-file on it as a release. It fails when a
// process of the group is still there after abandonWait.
func (e *earlyStart) abandon() error {
	var err error
	if e.proc != nil {
		// The wait kills, and waits for, the rest of the group (child.endGroup).
		e.proc.kill(syscall.SIGKILL)
		if _, werr := e.proc.wait(); errors.Is(werr, errGroupLeft) {
			err = werr
		}
		e.proc = nil
	}

	for _, w := range e.pipes {
		w.Close()
	}
	e.pipes = nil
	if e.block != nil {
		e.block.Close()
		e.block = nil
	}
	if e.ready != nil {
		e.ready.close()
		e.ready = nil
	}
	if e.master != nil {
		e.master.Close()
		e.master = nil
	}
	if e.outs != nil {
		_ = e.outs.close()
		e.outs = nil
	}
	if e.restoreIn != nil {
		e.restoreIn()
		e.restoreIn, e.in = nil, nil
	}
	if e.sess != nil {
		if rerr := e.sess.Remove(); err == nil && rerr != nil {
			err = fmt.Errorf("removing the early session /tmp: %w", rerr)
		}
		e.sess.Close()
		e.sess = nil
	}
	return err
}
