// Package bwrap runs a Plan under bubblewrap. Render turns the Plan into a bwrap
// invocation (pure); Run starts the host services (isolator/hostsvc), prepares the
// host side (sandbox home, session /tmp, data descriptors, the terminal), starts bwrap
// and relays signals until the command exits.
package bwrap

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/devsandbox/devsandbox/egress"
	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/isolator/bwrap/internal/prestart"
	"github.com/devsandbox/devsandbox/isolator/cgroup"
	"github.com/devsandbox/devsandbox/isolator/diskguard"
	"github.com/devsandbox/devsandbox/isolator/hostsvc"
	"github.com/devsandbox/devsandbox/isolator/pin"
	"github.com/devsandbox/devsandbox/isolator/projlock"
	"github.com/devsandbox/devsandbox/isolator/runmark"
	"github.com/devsandbox/devsandbox/isolator/sandboxinit/wire"
	"github.com/devsandbox/devsandbox/isolator/tmpdir"
	"github.com/devsandbox/devsandbox/isolator/tty"
)

// Isolator is the bubblewrap backend.
type Isolator struct {
	// Path of the bwrap binary; empty means look it up on PATH.
	Path string
	// Phase, when set, is called as each launch phase ends (for --debug timings).
	Phase func(name string)
	// Warn receives warnings for people; nil discards them.
	Warn func(msg string)
	// Debug, when set, receives notes for --debug (a speed path not taken, and why).
	Debug func(msg string)
	// Signals, when set, is the caller's subscription to isolator.ForwardedSignals,
	// made ahead of Run (isolator.CatchSignals); Run relays what it catches to the
	// command and leaves stopping it to the caller. Nil (a library's default): Run
	// subscribes to no signal at all; the process's signals stay its own, and the
	// caller stops the command by ending Run's context.
	Signals *isolator.Signals
	// EtcHead, when set, is the /etc snapshot opened ahead of the Plan
	// (PrestartEtc); Run uses it when it is the Plan's, else releases it.
	EtcHead *EtcHead
	// Binaries are the egress tools (pasta, nft, ...); zero means egress.DefaultBinaries.
	Binaries egress.Binaries
	// RuntimeDir is the user's $XDG_RUNTIME_DIR, where doctor looks for the systemd
	// user manager (Run takes it from the Plan's host environment).
	RuntimeDir string
	// Planned, when set, is the Plan a run from the working directory would get
	// (doctor's: nil outside a project); Diagnose counts the mount-table reads of
	// its launch from it (mountTableReads). Run and Render ignore it.
	Planned *isolator.Plan
	// StopGrace is how long the command has to exit after SIGTERM once Run's context
	// ends, before the whole sandbox is killed; zero means DefaultStopGrace.
	StopGrace time.Duration
	// Early, when set, is the launch's early start (StartEarly): Run adopts its bwrap
	// when the fresh rendering compares equal, abandons it otherwise, and keeps the
	// record of a launch that did not match. nil: no early start, no record.
	Early *Early

	// found is bwrap's path once the PATH search found it (QuickCheck, then Run).
	found string
}

func (b *Isolator) binaries() egress.Binaries {
	if b.Binaries.Nft != "" {
		return b.Binaries
	}
	bin := egress.DefaultBinaries
	if p, err := exec.LookPath("pasta"); err == nil {
		bin.Pasta = p
	}
	return bin
}

var _ isolator.Isolator = (*Isolator)(nil)
var _ isolator.Quick = (*Isolator)(nil)
var _ isolator.Viewer = (*Isolator)(nil)

// ViewPlacement implements isolator.Viewer: bwrap places p on the host's own root,
// the home at the host home's path (isolator.Placement's nil Container).
func (b *Isolator) ViewPlacement(*isolator.Plan) (isolator.Placement, error) {
	return isolator.Placement{}, nil
}

// DefaultStopGrace is Isolator.StopGrace's default.
const DefaultStopGrace = 10 * time.Second

// New returns the backend with defaults.
func New() isolator.Isolator { return &Isolator{} }

// Name implements isolator.Isolator.
func (*Isolator) Name() string { return "bwrap" }

func (b *Isolator) stopGrace() time.Duration {
	if b.StopGrace > 0 {
		return b.StopGrace
	}
	return DefaultStopGrace
}

func (b *Isolator) phase(name string) {
	if b.Phase != nil {
		b.Phase(name)
	}
}

func (b *Isolator) debug(format string, args ...any) {
	if b.Debug != nil {
		b.Debug(fmt.Sprintf(format, args...))
	}
}

func (b *Isolator) warn(format string, args ...any) {
	if b.Warn != nil {
		b.Warn(fmt.Sprintf(format, args...))
	}
}

func (b *Isolator) path() (string, error) {
	if b.Path != "" {
		return b.Path, nil
	}
	if b.found != "" {
		return b.found, nil
	}
	p, err := exec.LookPath("bwrap")
	if err == nil {
		b.found = p
	}
	return p, err
}

// Render implements isolator.Isolator: what Run would start on this host, with the
// limits enforced as Run would enforce them here (it probes the host's cgroups and
// systemd, and makes nothing). A limit that cannot be enforced here is Run's error.
func (*Isolator) Render(p *isolator.Plan) (isolator.Rendered, error) {
	e, l, err := chooseHere(p)
	if err != nil {
		return nil, err
	}
	o := renderOptions{ready: true, limits: &e, initAt: initReachable}
	if e.uses(byCgroup) {
		hs, err := l.For(e.controllers(byCgroup)...)
		if err != nil {
			return nil, err
		}
		o.cgroup = placement(p, e, hs, cgroup.NamePrefix+p.Project.ID+"-"+sessionPlaceholder, kernelAtLeast(kernelRelease(), minCloneKernel))
	}
	return render(p, egress.DefaultBinaries, o)
}

// Run implements isolator.Isolator. It keeps p's disk reserve (diskguard.Beside):
// the guard is made and first read beside the launch, once the host directories
// are made, and the init starts the command only after Run's go-ahead, which
// follows that reading (wire.AwaitGoArg).
func (b *Isolator) Run(ctx context.Context, p *isolator.Plan, stdio isolator.Stdio) (int, error) {
	return diskguard.Beside(ctx, p, func(ctx context.Context, reserve *diskguard.Pending) (int, error) {
		return b.run(ctx, p, stdio, reserve)
	})
}

func (b *Isolator) run(ctx context.Context, p *isolator.Plan, stdio isolator.Stdio, reserve *diskguard.Pending) (int, error) {
	if err := context.Cause(ctx); err != nil {
		return 0, fmt.Errorf("the sandbox did not start: %w", err)
	}
	// The caller's subscription, when it forwards signals (isolator.Signals: made
	// while it built the Plan, in effect before bwrap starts); a signal caught before
	// then is handled as one caught before the command runs. Without one, sigc is nil
	// and never ready.
	var sigc <-chan os.Signal
	var jobc <-chan os.Signal
	var jc *jobControl
	if b.Signals != nil {
		sigc, jobc = b.Signals.C, b.Signals.Job
		jc = &jobControl{c: b.Signals.Job}
		defer jc.release() // a run that ends stopped: the pidfds of what the stop stopped
	}
	// released is closed once the session /tmp is removed, which runs beside the
	// rest of the cleanup (see below); Run returns only once it is done.
	var released chan struct{}
	defer func() {
		if released != nil {
			<-released
		}
	}()
	// The /etc snapshot is opened on the other core while the host services start and
	// the host side is prepared and pinned (startEtc): first, since it is the longest.
	etcc := startEtc(p, b.EtcHead)
	defer etcc.discard()
	bin, err := b.path()
	if err != nil {
		return 0, fmt.Errorf("%w: bwrap not found on PATH: %s", isolator.ErrUnavailable, installHint)
	}
	if err := isolator.HostProgram(p, "bubblewrap", bin); err != nil {
		return 0, err
	}
	enf, layout, err := chooseHere(p)
	if err != nil {
		return 0, err
	}
	// In the proxy modes the init hands its listener on egress.SandboxProxyAddr to the
	// proxy (through the readiness socket and svc), which then serves the sandbox's
	// connections directly.
	svc, err := hostsvc.Start(p, hostsvc.Options{Warn: b.Warn, Phase: b.Phase, Stderr: stdio.Err, Listeners: p.Egress.NeedsProxy()})
	if err != nil {
		return 0, err
	}
	// The host services stop, and the session /tmp goes, once nothing of the sandbox
	// runs: when the init reports that it has exited (see readiness.gone), beside
	// bwrap's own exit, else when bwrap has exited. Either way Run returns only
	// once both are done.
	stopSvc := sync.OnceFunc(svc.Stop)
	defer stopSvc()
	// The session /tmp goes in two steps: its name when it is empty (removeSess, one
	// rmdir), then whatever the sandbox left in it, its lock and its last reference
	// (closeSess, which frees the directory and can wait on the disk); released is
	// closed after both.
	removeSess, closeSess := func() {}, func() {}
	early := b.Early.take()
	defer func() {
		if early != nil {
			if err := early.abandon(); err != nil {
				b.warn("%v", err)
			}
		}
	}()
	var reuse *tmpdir.Session
	if early != nil {
		reuse = early.sess
	}
	sess, mark, err := prepare(ctx, p, stdio.Err, sigc, reuse)
	if early != nil && sess != nil && sess == early.sess {
		early.sess = nil // Run's now: it removes it at the end, whatever bwrap runs in it
	}
	if err != nil {
		return 0, err
	}
	if mark != nil {
		defer mark.Release()
	}
	// The host directories the sandbox writes are made: the reserve's guard pins
	// them and reads their free space on another core while bwrap is prepared and
	// sets up, and the init waits for the verdict (see goAhead).
	reserve.Begin()
	if sess != nil {
		// Lost is checked at the end rather than watched with inotify: closing an
		// inotify descriptor waits for an RCU grace period, several milliseconds added
		// to every launch (measured 7-20 ms here), for a rare event.
		// Freeing the directory waits on the disk where the file system discards
		// freed blocks at once (ext4 without a journal: 0.2-0.3 ms here), so the
		// removal runs beside the host services' stop: on the goroutine that saw
		// the init exit (readiness.gone: an empty dir's name before it wakes this
		// one, a full removal and the wait after), else on one of its own. Run
		// returns only once it is done.
		released = make(chan struct{})
		var finishSess func(spawn func(func()))
		removeSess, closeSess, finishSess = endSession(sess, b.warn, released)
		defer finishSess(func(f func()) { go f() })
	}
	pins, err := pin.Plan(p)
	if err != nil {
		return 0, err
	}
	defer pins.Close()
	pp, index := pins.Apply()
	if sess != nil {
		pp.Tmp.Session = sess.Name
	}
	o := renderOptions{ready: true, limits: &enf, initAt: initReachable}
	etc, etcEntries := etcc.take(pp, b.Debug)
	o.etc = etcEntries
	if etc != nil {
		defer etc.Close()
	} else {
		o.noSnapshot = true
	}
	var cg *cgroup.Session
	if enf.uses(byCgroup) {
		if cg, o.cgroup, err = openSession(p, enf, layout); err != nil {
			return 0, err
		}
		defer func() {
			if err := cg.Remove(); err != nil {
				b.warn("%v", err)
			}
		}()
	}
	bins := egress.DefaultBinaries // only the allowlist mode runs them (pasta's prologue)
	if pp.Egress.Mode == egress.Allowlist {
		bins = b.binaries()
		if err := isolator.HostProgram(p, "pasta", bins.Pasta); err != nil {
			return 0, err
		}
	}
	spec, err := render(pp, bins, o)
	if err != nil {
		return 0, err
	}
	b.phase("prepare")

	env, err := childEnv(spec, p.HostEnv)
	if err != nil {
		return 0, err
	}
	var added []string // what Run adds to the rendered environment, for the record
	if len(spec.Checks) > 0 {
		added = append(added, wire.ManifestEnv+"="+wire.EncodeChecks(spec.Checks, pin.BootID()))
		env = append(env, added...)
	}
	etcDir := func() (*os.File, error) { return etcDescriptor(etc) }
	// An interactive run relays the user's terminal to a pty of its own: a library
	// caller that gives another writer than a file gets pipes, and nothing is written
	// to this process's own stdout.
	out, _ := stdio.Out.(*os.File)
	relays := out != nil && p.TTY && stdio.In != nil && tty.IsTerminal(stdio.In.Fd())
	if !relays && out != nil && tty.IsTerminal(out.Fd()) {
		// Stdout is the user's terminal, not relayed: the command's is a pty of
		// plainTerminals' (below). PAGER=cat is added before the early start's
		// comparison, and recorded (added), so that an early bwrap has it too.
		n := len(env)
		if env = pagerEnv(env); len(env) > n {
			added = append(added, env[n:]...)
		}
	}
	var adopt map[int][]byte // the contents an adopted early start is released with
	if early != nil {
		sessPath := ""
		if sess != nil {
			sessPath = sess.Path
		}
		err := early.adoptable(p, spec, relays)
		if err == nil {
			err = early.sameTerminals(stdio)
		}
		var fresh prestart.Launch
		if err == nil {
			fresh, err = launchOf(spec, bin, env, sessPath, identities(pins, index, etcDir))
		}
		if err == nil {
			err = prestart.Compare(&early.launch, &fresh)
		}
		if err == nil {
			adopt, err = contents(spec)
		}
		if err != nil {
			b.debug("early start: missed: %v", err)
			if aerr := early.abandon(); aerr != nil {
				return 0, aerr
			}
			early, adopt = nil, nil
		} else {
			// Said here, before an interactive run's relay puts the terminal in raw
			// mode (a line written then has no carriage return): the comparison is
			// what matched; a release that fails still ends the run with its error.
			b.debug("early start: matched")
		}
	}
	var ready *readyPair
	if adopt != nil {
		ready, early.ready = early.ready, nil
	} else if ready, err = newReadyPair(); err != nil {
		return 0, err
	}
	defer ready.close()
	var files []*os.File
	var writeErrs <-chan error
	if adopt == nil {
		if files, writeErrs, err = dataFiles(spec.Files, func(i int) *os.File { return pins.Sources[index[i]].File }, etcDir); err != nil {
			return 0, err
		}
	}
	argv := append([]string{bin}, spec.Argv[1:]...)
	var statusR, statusW *os.File
	if spec.Prologue {
		if statusR, statusW, err = os.Pipe(); err != nil {
			return 0, err
		}
		defer statusR.Close()
	}
	argv = append(append([]string{}, spec.Prefix...), argv...)
	path := argv[0]
	if !strings.Contains(path, "/") { // systemd-run, at the head of a scope's prefix
		if path, err = exec.LookPath(path); err != nil {
			return 0, fmt.Errorf("starting bwrap: %w", err)
		}
		if err := isolator.HostProgram(p, filepath.Base(path), path); err != nil {
			return 0, err
		}
		if spec.Scope != "" {
			if env, err = scopeStartEnv(p, env); err != nil {
				return 0, err
			}
		}
	}
	// Its own process group: keyboard signals reach devsandbox only, which forwards
	// them to the command (bwrap would otherwise die and SIGKILL the sandbox).
	attr := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if !spec.AwaitGo {
		// No init waits for a go-ahead: the reserve's verdict comes before bwrap.
		if err := reserve.Ready(); err != nil {
			return 0, err
		}
	}
	if err := startIn(argv, attr, spec.Cgroup, cg); err != nil {
		return 0, err
	}

	var relay *tty.Relay
	var plainClose func() error
	var stdioFiles *childStdio
	// A terminal is relayed between files only: the caller's stdin and stdout (a
	// library caller that gives another writer gets pipes, and nothing is written
	// to this process's own stdout).
	if adopt != nil && early.master != nil {
		// An interactive run's early bwrap is on the slave of a pty of its own
		// (startEarlyPty, adoptable: relays): the relay starts on its master as below,
		// before the release, so the command starts with the terminal's size.
		master := early.master
		early.master = nil
		defer master.Close()
		if relay, err = tty.StartRelay(stdio.In, out, master, tty.FilterOptions{AllowClipboard: p.TerminalClipboard}); err != nil {
			return 0, fmt.Errorf("relaying the terminal: %w", err)
		}
	} else if adopt != nil {
		// The early bwrap has this process's standard descriptors, or, in place of
		// each terminal among them, what the branch below makes (startEarlyTerminals,
		// sameTerminals): the same read-only terminal or /dev/null for stdin, whose
		// state is restored after the run; a pty per output terminal, whose filter
		// starts now, with the configuration's options, before the release.
		if early.restoreIn != nil {
			restoreIn := early.restoreIn
			early.restoreIn = nil
			defer restoreIn()
			if jc != nil && early.in.Name() == "/dev/tty" {
				jc.stdinTerm = true
			}
		}
		if early.outs != nil {
			outs := early.outs
			early.outs = nil
			if plainClose, err = outs.start(tty.FilterOptions{AllowClipboard: p.TerminalClipboard}); err != nil {
				return 0, err
			}
		}
	} else if relays {
		master, slave, err := tty.Open()
		if err != nil {
			return 0, fmt.Errorf("allocating a terminal for the sandbox: %w", err)
		}
		defer master.Close()
		stdioFiles = &childStdio{files: [3]*os.File{slave, slave, slave}, closeAfter: []*os.File{slave}}
		if relay, err = tty.StartRelay(stdio.In, out, master, tty.FilterOptions{AllowClipboard: p.TerminalClipboard}); err != nil {
			slave.Close()
			return 0, fmt.Errorf("relaying the terminal: %w", err)
		}
	} else {
		// Not interactive, yet stdin may be the user's terminal: the command reads it
		// through a read-only descriptor, and what it changes of the terminal is put
		// back once the sandbox is gone (the deferred restore runs after bwrap's exit).
		in, restoreIn, err := stdinTerminal(stdio.In, b.warn)
		if err != nil {
			return 0, err
		}
		if restoreIn != nil {
			defer restoreIn()
		}
		if jc != nil && in != nil && in.Name() == "/dev/tty" {
			jc.stdinTerm = true
		}
		if stdioFiles, err = newChildStdio(in, stdio.Out, stdio.Err); err != nil {
			return 0, fmt.Errorf("starting bwrap: %w", err)
		}
		// Not interactive, yet the output may reach the user's terminal: through a
		// pty of the command's own, filtered, never as the terminal's descriptor
		// (PAGER=cat is in env for a stdout terminal, above).
		if plainClose, err = plainTerminals(stdioFiles, tty.FilterOptions{AllowClipboard: p.TerminalClipboard}); err != nil {
			stdioFiles.close()
			return 0, err
		}
	}

	if b.Signals != nil {
		b.Signals.Wait()
	}
	var proc *child
	if adopt != nil {
		// The fresh contents, then the block's byte: bwrap goes on, as the fresh
		// rendering would have started it.
		if err = early.release(adopt); err == nil {
			proc, early.proc, early = early.proc, nil, nil
			// Used: kept by the records' bound and sweep (not written again).
			if err := b.Early.store.Touch(b.Early.key); err != nil {
				b.debug("early start: the launch record was not marked used: %v", err)
			}
			wc := make(chan error, 1)
			wc <- nil
			writeErrs = wc
		}
	} else {
		proc, err = startChild(path, argv, env, stdioFiles, append([]*os.File{ready.child, statusW}, files...), attr)
	}
	for _, f := range files {
		f.Close()
	}
	ready.child.Close()
	if statusW != nil {
		statusW.Close()
	}
	if err != nil {
		if relay != nil {
			_ = relay.Close()
		}
		if plainClose != nil {
			_ = plainClose()
		}
		return 0, fmt.Errorf("starting bwrap: %w", err)
	}
	b.phase("start bwrap")
	if jc != nil {
		jc.bwrapPid, jc.bwrapPgid = proc.pid, proc.pgid
	}
	if adopt == nil && b.Early != nil {
		// For the next launch of this command line: while bwrap sets up.
		dir := ""
		if etc != nil {
			dir = etc.Path
		}
		if err := b.Early.record(spec, pp, bin, dir, added); err != nil {
			b.debug("early start: the launch record was not kept: %v", err)
		}
	}

	if spec.AwaitGo {
		if err := goAhead(reserve, ready, proc); err != nil {
			if relay != nil {
				_ = relay.Close()
			}
			if plainClose != nil {
				_ = plainClose()
			}
			<-writeErrs
			return 0, err
		}
	}

	statusc := make(chan string, 1)
	if statusR != nil {
		go func() {
			line, _ := bufio.NewReader(statusR).ReadString('\n')
			statusc <- strings.TrimSpace(line)
		}()
	} else {
		statusc <- egress.StatusOK
	}
	pidc := make(chan readiness, 1)
	go func() {
		pidc <- ready.wait(func(ln *os.File) {
			defer ln.Close() // the proxy's copy is the only one now
			if err := svc.HandListener(ln); err != nil {
				b.warn("the sandbox's connections to the egress proxy are refused: %v", err)
			}
		})
	}()
	type exit struct {
		ws  syscall.WaitStatus
		err error
	}
	waitc := make(chan exit, 1)
	go func() {
		ws, err := proc.wait()
		waitc <- exit{ws, err}
	}()

	var rd readiness
	var pending []syscall.Signal
	var gone <-chan struct{}
	cmdPid := 0
	var ex exit
	// The end of ctx stops the sandbox: SIGTERM to the command, then, after the
	// grace, SIGKILL to bwrap, which takes every process of the sandbox with it
	// (--die-with-parent, the pid namespace). Before the init's report names the
	// command, SIGTERM waits for it as a forwarded signal does: the command may
	// already run (its report is sent after its start), and SIGTERM to bwrap would
	// end the sandbox without the command seeing it. The grace runs from the
	// cancel either way. A cause wrapping isolator.ErrStopNow skips SIGTERM and the
	// grace: SIGKILL to bwrap at once.
	stopc, stopped := ctx.Done(), false
	var killc <-chan time.Time
	// toBwrap: a signal was forwarded to bwrap itself (before the command was
	// known), which may end it: its end by a signal is then no surprise (unasked).
	toBwrap := false
	for done := false; !done; {
		select {
		case <-stopc:
			stopc, stopped = nil, true
			if isolator.StopsNow(ctx) {
				// No grace: the command may not exit when asked (isolator.ErrStopNow).
				proc.kill(syscall.SIGKILL)
				continue
			}
			if cmdPid == 0 {
				pending = append(pending, syscall.SIGTERM)
			} else {
				toBwrap = forward(syscall.SIGTERM, cmdPid, proc.pid) || toBwrap
			}
			t := time.NewTimer(b.stopGrace())
			defer t.Stop()
			killc = t.C
		case <-killc:
			killc = nil
			b.warn("the command did not exit within %s of SIGTERM after the run was cancelled; killing the sandbox", b.stopGrace())
			proc.kill(syscall.SIGKILL)
		case rd = <-pidc:
			cmdPid = rd.pid
			pidc = nil
			if jc != nil {
				jc.cmdPid, jc.cmdPidfd = cmdPid, rd.cmdPidfd
			}
			gone = rd.gone(removeSess, closeSess)
			b.phase("sandbox ready")
			for _, s := range pending {
				toBwrap = forward(s, cmdPid, proc.pid) || toBwrap
			}
			pending = nil
		case <-gone:
			// Nothing of the sandbox runs any more: its cleanup need not wait for
			// bwrap to learn that too. The session /tmp goes on the goroutine that
			// closed gone (readiness.gone) while the host services stop on this
			// one (their final check) and bwrap exits.
			gone = nil
			stopSvc()
			_ = rd.pidfd.Close() // else the goroutine of gone closes it after the removal
		case s := <-sigc:
			// Before the command runs, the first signal waits for it (it may be
			// reporting right now); a second one tears the half-built sandbox down.
			if cmdPid == 0 && len(pending) == 0 {
				pending = append(pending, s.(syscall.Signal))
				continue
			}
			toBwrap = forward(s.(syscall.Signal), cmdPid, proc.pid) || toBwrap
		case s := <-jobc:
			jc.handle(s, b.warn, func() { proc.kill(syscall.SIGKILL) }, func() (os.Signal, bool) {
				select {
				case s := <-sigc:
					return s, true
				default:
					return nil, false
				}
			}, func(s os.Signal) { toBwrap = forward(s.(syscall.Signal), cmdPid, proc.pid) || toBwrap })
		case ex = <-waitc:
			done = true
		}
	}
	if pidc != nil {
		// bwrap is gone; the readiness report, if any, is in the socket buffer.
		rd = <-pidc
		cmdPid = rd.pid
		if rd.pidfd != nil {
			rd.pidfd.Close()
		}
	}
	if ex.err == nil && ex.ws.Signaled() && !proc.killed.Load() && !toBwrap {
		// Nothing of devsandbox's ended bwrap: said, since the exit status (128+N)
		// is bwrap's, not the command's.
		b.warn("%s", unaskedEnd(proc.pid, ex.ws.Signal(), rd.pid != 0))
	}
	if rd.cmdPidfd != nil {
		rd.cmdPidfd.Close()
	}
	if relay != nil {
		_ = relay.Close()
	}
	if plainClose != nil {
		_ = plainClose()
	}
	writeErr := <-writeErrs
	if errors.Is(ex.err, errGroupLeft) {
		b.warn("%v; end it by hand", ex.err)
	}
	code := exitCode(ex.ws, ex.err)
	if stopped {
		// The host services, the session /tmp and the cgroup go as after any exit
		// (the deferred calls); Run returns once they have.
		if cmdPid == 0 {
			return 0, fmt.Errorf("the sandbox was stopped before the command ran: %w", context.Cause(ctx))
		}
		return code, fmt.Errorf("the command was stopped (exit status %d): %w", code, context.Cause(ctx))
	}
	if cmdPid != 0 {
		if stdio.Err != nil {
			reportLimits(stdio.Err, p, spec, cg, code)
		}
		return code, nil
	}
	status := <-statusc
	switch {
	case strings.HasPrefix(status, egress.StatusFail):
		return 0, fmt.Errorf("%w: the egress rules could not be applied, so the command did not run: %s", isolator.ErrProtection, strings.TrimPrefix(status, egress.StatusFail))
	case status != egress.StatusOK:
		return 0, fmt.Errorf("%w: pasta could not set up the sandbox's network (exit status %d, its message is above); the command did not run. `devsandbox doctor` checks pasta and /dev/net/tun", isolator.ErrProtection, code)
	case rd.failure != "":
		return 0, fmt.Errorf("%w: %s; the command did not run", isolator.ErrProtection, rd.failure)
	case writeErr != nil:
		return 0, fmt.Errorf("%w: feeding a file to bwrap: %w; the command did not run", isolator.ErrProtection, writeErr)
	}
	return 0, b.setupFailed(ctx, p, code, pins.Removed(), pins.MasksGone())
}

// goAhead lets the init start the command (wire.AwaitGoArg) once the reserve's
// first reading passed; when it did not, or the go-ahead cannot be sent, it kills
// bwrap and its process group (bwrap's child may be in its setup, not yet bound to
// bwrap's life: child.endGroup), before the command runs, reaps bwrap and returns
// why. An init that is gone already (it failed, and reported why) cannot take the
// go-ahead: the run goes on to read its report.
func goAhead(reserve *diskguard.Pending, ready *readyPair, proc *child) error {
	err := reserve.Ready()
	if err == nil {
		err = ready.goAhead()
		if errors.Is(err, unix.EPIPE) || errors.Is(err, unix.ECONNRESET) {
			return nil
		}
		if err != nil {
			err = fmt.Errorf("%w: sending the init its go-ahead: %w; the command did not run", isolator.ErrProtection, err)
		}
	}
	if err != nil {
		// SIGKILL to bwrap; its wait kills and waits for the rest of its group
		// (child.endGroup): bwrap's child, still in its setup.
		proc.kill(syscall.SIGKILL)
		if _, werr := proc.wait(); errors.Is(werr, errGroupLeft) {
			err = fmt.Errorf("%w; and %w", err, werr)
		}
	}
	return err
}

// forward sends s to the command's process group once it runs, else to bwrap (which
// then takes the half-built sandbox down with it); toBwrap says which.
func forward(s syscall.Signal, cmdPid, bwrapPid int) (toBwrap bool) {
	if cmdPid > 0 {
		if err := syscall.Kill(-cmdPid, s); err == nil {
			return false
		}
		_ = syscall.Kill(cmdPid, s)
		return false
	}
	_ = syscall.Kill(bwrapPid, s)
	return true
}

// unaskedEnd says that bwrap (pid) was ended by sig, which devsandbox did not send
// (neither its kill nor a forwarded signal): the sandbox ended with it (its init
// has bwrap's death as its own parent-death signal), and the run's exit status,
// 128+sig, is bwrap's, not the command's. started: the init had reported (the
// command started). Whether the command had exited before is not known then: the kill
// of the sandbox ends it, and its status is the init's, which is gone too.
func unaskedEnd(pid int, sig syscall.Signal, started bool) string {
	name := unix.SignalName(sig)
	if name == "" {
		name = fmt.Sprintf("signal %d", int(sig))
	}
	what := fmt.Sprintf("bubblewrap (pid %d) was killed by %s, which devsandbox did not send", pid, name)
	if !started {
		return fmt.Sprintf("%s, before the command started (exit status %d)", what, 128+int(sig))
	}
	return fmt.Sprintf("%s; the sandbox ended with it: the exit status %d is bubblewrap's, not the command's", what, 128+int(sig))
}

// exitCode is bwrap's status as devsandbox's: 128+N when a signal N killed it, 125
// when it could not be reaped.
func exitCode(ws syscall.WaitStatus, err error) int {
	switch {
	case err != nil && !ws.Exited() && !ws.Signaled():
		return 125
	case ws.Signaled():
		return 128 + int(ws.Signal())
	}
	return ws.ExitStatus()
}

// setupFailed explains a bwrap that exited before the init ran: the command never
// started. removed are the pinned sources removed or replaced on the host meanwhile
// (pin.Set's Removed): bwrap names such a source only as /proc/self/fd/N. vanished
// are the host sockets masked in the view that are gone now (pin.Set's MasksGone):
// bwrap could not create such a mask's destination in a read-only view. The
// availability probe runs only now, off the hot path, and judges the bubblewrap it
// runs against p, the run's own Plan, as the run did before it started it.
func (b *Isolator) setupFailed(ctx context.Context, p *isolator.Plan, code int, removed, vanished []string) error {
	if len(removed) > 0 {
		return pin.RemovedError(removed, "bubblewrap", fmt.Errorf("bubblewrap exited with status %d, its message is above", code))
	}
	if len(vanished) > 0 {
		return fmt.Errorf("%w: the host socket %s, which this view masks, was removed while the sandbox was being set up, so bubblewrap could not place its mask (exit status %d, its message is above); the command did not run: run it again", isolator.ErrProtection, strings.Join(vanished, ", "), code)
	}
	probe := *b
	probe.Planned = p
	st := probe.Check(ctx)
	if st.State != isolator.Active {
		return fmt.Errorf("%w: %s; %s", isolator.ErrUnavailable, st.Reason, st.Fix)
	}
	return fmt.Errorf("%w: bubblewrap could not set up the sandbox (exit status %d, its message is above); the command did not run. Run `devsandbox --dry-run` to see the mounts and `devsandbox doctor` to check the host", isolator.ErrProtection, code)
}

// PrepareHost creates what a Plan's mounts need on the host: the sandbox home and
// other private directories, the empty file masks are bound from, and the copy of
// SystemView.Passwd WrapArgv binds (PasswdFile); it refuses a mount point bubblewrap
// would have to create in a read-only directory (isolator.CheckMountPoints). Begin
// calls it, under the project's lock, for a library session.
func PrepareHost(p *isolator.Plan) error {
	if err := prepareHost(p); err != nil {
		return err
	}
	return writePasswdFile(p, time.Now())
}

// prepareHost is PrepareHost without the passwd copy, which Run, feeding it through a
// descriptor, does not need.
func prepareHost(p *isolator.Plan) error {
	if err := isolator.PrepareHost(p); err != nil {
		return err
	}
	return isolator.CheckMountPoints(p)
}

// prepare creates the host directories a run needs and establishes the run's presence,
// which `sandboxes prune` asks: the session /tmp in the project's state directory
// (tmpdir.Held), or with a /tmp in memory (sandbox.tmp tmpfs or shm), the project's
// run mark (runmark.Held). Both under the project's lock (package projlock), so that
// prune either sees the run or has removed the project before it begins; a wait for
// prune is said on stderr and ends with ctx or a signal on sigc.
//
// reuse is an early start's session /tmp: taken when it is in p's tmp/ and still the
// directory it made (a prune that ran before the lock was taken removed it).
func prepare(ctx context.Context, p *isolator.Plan, stderr io.Writer, sigc <-chan os.Signal, reuse *tmpdir.Session) (*tmpdir.Session, *runmark.Mark, error) {
	unlock, err := projlock.Shared(ctx, p.StateDir, projlock.Waiting(stderr, p.StateDir), sigc)
	if err != nil {
		return nil, nil, fmt.Errorf("the sandbox did not start: %w", err)
	}
	defer unlock()
	if err := prepareHost(p); err != nil {
		return nil, nil, err
	}
	var sess *tmpdir.Session
	if p.Tmp.Kind != "tmpfs" {
		tmpdir.CleanOrphans(p.Tmp.Dir, time.Now(), tmpdir.MaxAge)
		if reuse != nil && p.Tmp.Kind == "session" && filepath.Dir(reuse.Path) == p.Tmp.Dir && !reuse.Lost() {
			sess = reuse
		} else if sess, err = tmpdir.Acquire(p.Tmp.Dir); err != nil {
			return nil, nil, err
		}
	}
	if sess != nil && filepath.Dir(sess.Path) == filepath.Join(p.StateDir, "tmp") {
		return sess, nil, nil
	}
	m, err := runmark.Hold(p.StateDir)
	if err != nil {
		if sess != nil {
			_ = sess.Release()
		}
		return nil, nil, fmt.Errorf("marking the project's state directory %s in use: %w", p.StateDir, err)
	}
	return sess, m, nil
}

// childEnv is the environment bwrap starts with; bwrap passes it to the command, so
// secret values travel in the environment and never in argv. A variable the host's
// dynamic loader would act on travels renamed (wire.HostSafeEnv): bwrap (and pasta
// before it) runs on the host, and the init names it back for the command.
func childEnv(spec *Spec, host map[string]string) ([]string, error) {
	env := make([]string, 0, len(spec.Env)+len(spec.SecretEnv))
	for _, e := range spec.Env {
		env = append(env, e.Name+"="+e.Value)
	}
	for _, s := range spec.SecretEnv {
		v, ok := host[s.EnvSource]
		if !ok {
			return nil, fmt.Errorf("%w: secret %s: the host variable %s is not set", isolator.ErrProtection, s.Name, s.EnvSource)
		}
		env = append(env, s.Name+"="+v)
	}
	return wire.HostSafeEnv(append(env, spec.InitEnv...)), nil
}

const installHint = "install bubblewrap (Debian/Ubuntu: sudo apt-get install bubblewrap; Fedora: sudo dnf install bubblewrap; Arch: sudo pacman -S bubblewrap)"

// QuickCheck implements isolator.Quick: bwrap is on PATH. It starts no process.
func (b *Isolator) QuickCheck() isolator.Status {
	if _, err := b.path(); err != nil {
		return isolator.Status{State: isolator.Unavailable, Reason: "bwrap is not installed", Fix: installHint}
	}
	return isolator.Status{State: isolator.Active}
}

// Check implements isolator.Isolator: it runs bwrap with a user namespace.
func (b *Isolator) Check(ctx context.Context) isolator.Status {
	bin, err := b.path()
	if err != nil {
		return isolator.Status{State: isolator.Unavailable, Reason: "bwrap is not installed", Fix: installHint}
	}
	if err := b.judge("bubblewrap", bin); err != nil {
		return isolator.Status{State: isolator.Unavailable, Reason: refusal(err), Fix: "the reason says which PATH entry to change; it was not run"}
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	// bwrap --version prints and exits, with no child: killing it alone ends it.
	if v, err := exec.CommandContext(ctx, bin, "--version").Output(); err == nil && !versionAtLeast(strings.TrimSpace(string(v)), minBwrap) {
		return isolator.Status{State: isolator.Unavailable,
			Reason: fmt.Sprintf("%s is older than %d.%d.%d, which devsandbox needs: its --as-pid-1 keeps every process of the sandbox under the syscall filter, and --disable-userns", strings.TrimSpace(string(v)), minBwrap[0], minBwrap[1], minBwrap[2]),
			Fix:    "upgrade bubblewrap (Debian 12, Ubuntu 24.04 and Fedora 38 ship 0.8.0 or later), or use --isolator=docker"}
	}
	var out bytes.Buffer
	err = runTrial(ctx, bin, []string{bin, "--unshare-all", "--die-with-parent", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "true"}, &out)
	if err == nil {
		return isolator.Status{State: isolator.Active}
	}
	return sandboxFailure(out.String(), err)
}

// sandboxFailure is Check's diagnosis of a failed trial sandbox from what bwrap
// printed (out) and how it ended (err): the reason, and the fix for the cause its
// message names.
func sandboxFailure(out string, err error) isolator.Status {
	msg := strings.TrimSpace(out)
	st := isolator.Status{State: isolator.Unavailable, Reason: fmt.Sprintf("bwrap cannot create a sandbox: %s", firstLine(msg, err))}
	switch {
	case strings.Contains(msg, "setting up uid map") || strings.Contains(msg, "No permissions to create"):
		st.Fix = "unprivileged user namespaces are disabled or restricted: on Ubuntu 24.04 allow them for bwrap with an AppArmor profile (see docs/security-model.md), elsewhere set the sysctl kernel.unprivileged_userns_clone=1 (and user.max_user_namespaces > 0)"
	case strings.Contains(msg, "proc"):
		st.Fix = "mounting /proc failed: this is usually a container without its own pid namespace privileges; run devsandbox on the host or use --isolator=docker"
	default:
		st.Fix = "run `bwrap --unshare-all --ro-bind / / true` to see the full error"
	}
	return st
}

// endSession returns the two steps that end the session /tmp sess: remove (its name,
// when it is empty) and closeAll (remove, then whatever the sandbox left in it, its
// lock and its last reference, then close released). Each runs once however often,
// and from whichever goroutine, it is called; a session dir removed or replaced on
// the host during the run is told with one warning, by the first of them.
//
// finish is Run's last call: closeAll on a goroutine of its own (spawn), beside the
// rest of Run's cleanup, unless closeAll has begun already (on the goroutine that saw
// the init exit, readiness.gone), which is the usual end of a run. A goroutine
// started then would only wait for that one, and its start is paid on the exit
// path: the runtime wakes, or makes, a thread for it.
func endSession(sess *tmpdir.Session, warn func(format string, args ...any), released chan struct{}) (remove, closeAll func(), finish func(spawn func(func()))) {
	var begun atomic.Bool
	remove = sync.OnceFunc(func() {
		if sess.Lost() {
			warn("the session /tmp %s was removed on the host while the sandbox ran; files the command had in /tmp were lost with it", sess.Path)
		}
		sess.RemoveEmpty()
	})
	closeAll = sync.OnceFunc(func() {
		begun.Store(true)
		remove()
		if err := sess.Remove(); err != nil {
			warn("the session /tmp %s could not be removed (%v); what the command left there stays on the host until you remove it (rm -rf %s)", sess.Path, err, sess.Path)
		}
		sess.Close()
		close(released)
	})
	finish = func(spawn func(func())) {
		if !begun.Load() {
			spawn(closeAll)
		}
	}
	return remove, closeAll, finish
}

func firstLine(s string, err error) string {
	if s == "" {
		return err.Error()
	}
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
