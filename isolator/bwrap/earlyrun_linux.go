package bwrap

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"time"

	"golang.org/x/sys/unix"

	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/isolator/bwrap/internal/prestart"
	"github.com/devsandbox/devsandbox/isolator/internal/jobstop"
	"github.com/devsandbox/devsandbox/isolator/pin"
	"github.com/devsandbox/devsandbox/isolator/tty"
)

// Early is bwrap's early start for one launch (StartEarly): bwrap started from the
// record of the previous launch of the same command line, before the Plan, and where
// this launch's record is kept. Run adopts the start when the fresh rendering
// compares equal in everything bwrap consumed, abandons it otherwise, and records
// the launch when nothing matched. On by default, unless the machine is loaded
// or stdin is a terminal other than the controlling one in a run that is not
// interactive; off with config.EarlyStartVar=0 or sandbox.early_start = false; see
// docs/performance.md.
type Early struct {
	store prestart.Store
	key   string
	root  string
	start *earlyStart
	// terminal: stdin is a terminal other than this session's controlling terminal
	// in a run that is not interactive: Run's ordinary path reopens it read-only
	// with a warning (stdinTerminal), which no early start makes; nothing is
	// recorded then.
	terminal bool
	note     string
}

// earlyLoad is the load average per CPU at or above which no early start is made:
// with the other core busy, bwrap's setup and the planning slow each other (the
// study: the gain halved at 2 per CPU, a loss at 3 and more).
const earlyLoad = 2.0

// StartEarly starts bwrap early for the launch of args from the working directory
// wd by the user uid, from its record under stateRoot ($XDG_STATE_HOME/devsandbox),
// unless stdin is a terminal other than the controlling one in a run that is not
// interactive, the machine is loaded, or there is no usable record (a record
// refused is removed). A terminal never reaches the early bwrap: an interactive
// run's starts on a pty of its own, another's on what Run gives the command in
// place of each terminal (startEarlyTerminals). lookup reads the host's variables;
// anyLoad skips the load gate. subscribed, when not nil, is called right before
// bwrap is started and returns once the caller's signal subscription is in effect
// (isolator.Signals.Wait): the caller makes it first, and its round trips between
// threads (0.2 ms) overlap the record's read and vetting instead of preceding them.
func StartEarly(stateRoot string, uid int, wd string, args []string, lookup func(string) (string, bool), anyLoad bool, subscribed func()) *Early {
	stdio := [3]*os.File{os.Stdin, os.Stdout, os.Stderr}
	term := terminals(stdio)
	// An interactive run (stdin and stdout terminals, as the planner's TTY and Run's
	// relay decide it from the same descriptors) gets a pty of its own, as Run would
	// give it: bwrap starts on the pty's slave, Run relays the user's terminal to its
	// master once the launch is adopted. Another run with a terminal gets what Run
	// puts in its place. Each shape's records are apart from the others' (an
	// argument never holds a NUL): an output terminal adds PAGER=cat, and the same
	// command line run both ways would replace its record at each launch.
	interactive := term[0] && term[1]
	keyArgs := args
	if shape := terminalShape(term); shape != "" {
		keyArgs = append([]string{"\x00" + shape}, args...)
	}
	e := &Early{store: prestart.Store{Dir: filepath.Join(stateRoot, "prestart")}, key: prestart.LaunchKey(uid, wd, keyArgs), root: stateRoot}
	if otherSessionStdin(term, os.Stdin) {
		e.terminal, e.note = true, "not made: stdin is a terminal other than this session's controlling terminal"
		return e
	}
	if l, ok := loadPerCPU(); ok && l >= earlyLoad && !anyLoad {
		e.note = fmt.Sprintf("not made: load average %.2f per CPU", l)
		return e
	}
	rec, err := e.store.Load(e.key)
	if err == nil {
		err = sameBwrap(rec)
	}
	switch {
	case err != nil:
	case interactive:
		e.start, err = startEarlyPty(rec, stateRoot, lookup, subscribed)
	case term[0] || term[1] || term[2]:
		e.start, err = startEarlyTerminals(rec, stateRoot, lookup, subscribed, stdio, term)
	default:
		e.start, err = startEarly(rec, stateRoot, lookup, subscribed, stdio)
	}
	switch {
	case err == nil:
		e.start.std, e.start.shape = stdio, term
		e.note = "made"
	case errors.Is(err, prestart.ErrNoRecord):
		e.note = "not made: no record of this launch"
	default:
		e.note = fmt.Sprintf("not made: %v", err)
		if errors.Is(err, prestart.ErrRecord) || errors.Is(err, prestart.ErrUnsafe) {
			_ = e.store.Remove(e.key)
		}
	}
	return e
}

// terminals reports which of stdio are terminals.
func terminals(stdio [3]*os.File) (term [3]bool) {
	for i, f := range stdio {
		term[i] = tty.IsTerminal(f.Fd())
	}
	return term
}

// otherSessionStdin reports whether a run with these terminals (terminals) and this
// stdin starts nothing early: stdin is a terminal other than this session's
// controlling terminal in a run that is not interactive, which Run reopens
// read-only with a warning (stdinTerminal) and no early start makes. StartEarly
// and doctor's row (EarlyCheck) decide it here, alike.
func otherSessionStdin(term [3]bool, stdin *os.File) bool {
	return !(term[0] && term[1]) && term[0] && !jobstop.ControllingTerminal(stdin)
}

// terminalShape names which of stdin, stdout and stderr are terminals, for the
// record's key: "" for none, "interactive" for stdin and stdout (the key interactive
// runs had before the other shapes were started early), else "terminal" and the
// streams, e.g. "terminal out err".
func terminalShape(term [3]bool) string {
	switch {
	case term[0] && term[1]:
		return "interactive"
	case !term[0] && !term[1] && !term[2]:
		return ""
	}
	shape := "terminal"
	for i, name := range []string{"in", "out", "err"} {
		if term[i] {
			shape += " " + name
		}
	}
	return shape
}

// sameBwrap refuses a record whose bubblewrap is not the one Run would start (PATH's
// bwrap): the record is trusted for nothing, and startEarly runs its binary on the
// host before anything is compared.
func sameBwrap(rec *prestart.Record) error {
	bin, err := exec.LookPath("bwrap")
	if err != nil {
		return fmt.Errorf("%w: bwrap not found on PATH: %w", prestart.ErrMismatch, err)
	}
	if rec.Bwrap != bin {
		return fmt.Errorf("%w: the record's bubblewrap %s is not PATH's %s", prestart.ErrUnsafe, rec.Bwrap, bin)
	}
	if at := isolator.UserWritable(bin); at != "" {
		return fmt.Errorf("%w: PATH's bubblewrap %s is where you can write (%s), so a sandbox could have put it there; it is judged against the plan, not started early", prestart.ErrMismatch, bin, at)
	}
	return nil
}

// Started reports whether StartEarly started bwrap (and no run has taken it yet).
func (e *Early) Started() bool { return e != nil && e.start != nil }

// Note says what StartEarly did, for --debug.
func (e *Early) Note() string {
	if e == nil {
		return "off"
	}
	return e.note
}

// Abandon ends an early start Run did not adopt (a launch that did not reach Run, or
// not bwrap's); nothing when there is none. It may be called more than once.
func (e *Early) Abandon() error {
	if e == nil || e.start == nil {
		return nil
	}
	s := e.start
	e.start = nil
	return s.abandon()
}

// Forget abandons the early start, if one was made, and removes this launch's
// record: sandbox.early_start = false, read after the start, so that the next launch
// makes none. When there was one, the records of the same project's other command
// lines go too (prestart.Store.Forget: those whose session /tmp is in project's state
// directory, stateDir/tmp), so that none of them starts a bwrap only to abandon it; a
// launch that finds no record of its own looks at no other. It returns how many
// records it removed. Run records nothing for a launch whose Early is nil.
func (e *Early) Forget(projectState string) (int, error) {
	if e == nil {
		return 0, nil
	}
	err := e.Abandon()
	tmpBase := ""
	if projectState != "" {
		tmpBase = filepath.Join(projectState, "tmp")
	}
	n, rerr := e.store.Forget(e.key, tmpBase)
	if rerr != nil && err == nil {
		err = fmt.Errorf("removing the launch records: %w", rerr)
	}
	return n, err
}

// Root is the state root the early start read its record under
// ($XDG_STATE_HOME/devsandbox).
func (e *Early) Root() string {
	if e == nil {
		return ""
	}
	return e.root
}

// CountRecords returns how many launch records are kept under stateRoot, for doctor.
func CountRecords(stateRoot string) int {
	return prestart.Store{Dir: filepath.Join(stateRoot, "prestart")}.Count()
}

// PruneRecords removes the launch records under stateRoot ($XDG_STATE_HOME/devsandbox)
// that no launch wrote or used within maxAge, beyond the newest prestart.MaxRecords,
// and what an interrupted save left (prestart.Store.Sweep: regular files of the
// user's named as records, in the records' private directory, nothing followed);
// with dryRun it removes nothing. It returns the paths removed (or that would be).
func PruneRecords(stateRoot string, maxAge time.Duration, now time.Time, dryRun bool) ([]string, error) {
	return prestart.Store{Dir: filepath.Join(stateRoot, "prestart")}.Sweep(maxAge, now, dryRun)
}

// loadPerCPU is the one-minute load average over the CPUs this process may use,
// from sysinfo(2): one system call on the launch's path where reading
// /proc/loadavg took an open, a read of a generated file and a close. The kernel
// keeps the average in fixed point (FSHIFT 11 bits); sysinfo gives it shifted to
// SI_LOAD_SHIFT (16) bits, /proc/loadavg rounds the same value to two decimals.
func loadPerCPU() (float64, bool) {
	var si unix.Sysinfo_t
	if err := unix.Sysinfo(&si); err != nil {
		return 0, false
	}
	return float64(si.Loads[0]) / (1 << unix.SI_LOAD_SHIFT) / float64(runtime.NumCPU()), true
}

// adoptable reports whether Run may use the early start for p and its rendering
// spec, else why not: what bwrap's argv, environment and descriptors do not show
// (a prefix, a session cgroup, a terminal to relay) must be absent.
//
// relays says whether Run relays the user's terminal to a pty (an interactive run
// whose stdin and stdout are terminals): the early bwrap must then be on a pty of its
// own (startEarlyPty), and must not be otherwise.
func (s *earlyStart) adoptable(p *isolator.Plan, spec *Spec, relays bool) error {
	switch {
	case relays && s.master == nil:
		return fmt.Errorf("%w: an interactive run, and the early bwrap has no pty of its own", prestart.ErrMismatch)
	case !relays && s.master != nil:
		return fmt.Errorf("%w: the early bwrap is on a pty, and the run relays no terminal", prestart.ErrMismatch)
	case p.TTY && !relays:
		return fmt.Errorf("%w: an interactive run without a terminal to relay", prestart.ErrMismatch)
	case len(spec.Prefix) > 0:
		return fmt.Errorf("%w: bwrap is started by %s", prestart.ErrMismatch, spec.Prefix[0])
	case spec.Cgroup != nil || spec.Scope != "":
		return fmt.Errorf("%w: bwrap is started in the cgroup of its limits", prestart.ErrMismatch)
	}
	return nil
}

// contents are the fresh plan's contents of the early start's data and seccomp
// descriptors, for release, read as dataFiles reads them; not those of the contents
// the record holds, which the early start wrote before bwrap started and Compare
// found equal to the fresh plan's.
func contents(spec *Spec) (map[int][]byte, error) {
	c := map[int][]byte{}
	for _, f := range spec.Files {
		if f.Kind == Pinned || f.Kind == EtcSnapshot || recordedContent(f) {
			continue
		}
		b, err := fileData(f)
		if err != nil {
			return nil, err
		}
		c[f.FD] = b
	}
	return c, nil
}

// take hands Run the early start, if one was made; Abandon has nothing left to do.
func (e *Early) take() *earlyStart {
	if e == nil {
		return nil
	}
	s := e.start
	e.start = nil
	return s
}

// record keeps the record of this launch (spec, rendered from the pinned Plan p,
// started with bin; etcDir the /etc snapshot Run opened, "" when none; env what Run
// added by value) for the next one, or removes the old one when this launch cannot
// be recorded. Not when stdin is a terminal other than the controlling one in a run
// that is not interactive (no early start is made then).
func (e *Early) record(spec *Spec, p *isolator.Plan, bin, etcDir string, env []string) error {
	if e == nil || e.terminal {
		return nil
	}
	r, err := recordOf(spec, p, e.key, bin, etcDir, env)
	if err != nil {
		return e.store.Remove(e.key)
	}
	return e.store.Save(r)
}

// identities returns a spec descriptor's source identity as Run opened it: a pinned
// source (pins, through index from the rendered Plan's mounts) or the /etc snapshot.
func identities(pins *pin.Set, index []int, etcDir func() (*os.File, error)) func(File) (prestart.Identity, error) {
	return func(f File) (prestart.Identity, error) {
		if f.Kind == EtcSnapshot {
			d, err := etcDir()
			if err != nil {
				return prestart.Identity{}, err
			}
			defer d.Close()
			return prestart.Identify(d)
		}
		src := pins.Sources[index[f.Mount]]
		if src == nil {
			return prestart.Identity{}, fmt.Errorf("no descriptor for the source of %s", f.Dest)
		}
		return prestart.Identify(src.File)
	}
}
