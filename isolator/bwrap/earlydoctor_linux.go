package bwrap

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/devsandbox/devsandbox/isolator"
)

// EarlySetting is what decides the early start of a launch from here, as doctor
// reads it.
type EarlySetting struct {
	// On and Always are DEVSANDBOX_EARLY_START's mode (config.EarlyStart); Why says
	// where it comes from.
	On, Always bool
	Why        string
	// KeyOff is where sandbox.early_start = false was set; "" when it is true.
	KeyOff string
	// DefaultOn: the early start is on when DEVSANDBOX_EARLY_START is unset.
	DefaultOn bool
	// StateRoot is $XDG_STATE_HOME/devsandbox, where the launch records are.
	StateRoot string
}

// earlyFacts are the host's side of doctor's early-start row.
type earlyFacts struct {
	load      float64
	loadKnown bool
	// terminal: doctor's own stdin is a terminal other than its controlling one, and
	// stdout is none (not an interactive run), as a launch from the same place would
	// have it.
	terminal bool
	// writableBwrap is PATH's bubblewrap when the user may write it (at
	// writableAt): the early start starts none then (sameBwrap).
	writableBwrap, writableAt string
	// records is how many launch records are kept (in recordsDir).
	records    int
	recordsDir string
}

// EarlyCheck is doctor's row on bwrap's early start: whether a launch from here
// would start bwrap early, and why not (the variable, the key, the load, a terminal).
func EarlyCheck(s EarlySetting) isolator.Check {
	var f earlyFacts
	f.load, f.loadKnown = loadPerCPU()
	// Every shape of terminal starts early (StartEarly) but a run that is not
	// interactive whose stdin is another session's terminal.
	f.terminal = otherSessionStdin(terminals([3]*os.File{os.Stdin, os.Stdout, os.Stderr}), os.Stdin)
	// sameBwrap's refusal: a bubblewrap the user may write is never started early.
	if bin, err := exec.LookPath("bwrap"); err == nil {
		if at := isolator.UserWritable(bin); at != "" {
			f.writableBwrap, f.writableAt = bin, at
		}
	}
	if s.StateRoot != "" {
		f.recordsDir = filepath.Join(s.StateRoot, "prestart")
		f.records = CountRecords(s.StateRoot)
	}
	return earlyRow(s, f)
}

// earlyRowName names doctor's early-start row.
const earlyRowName = "early start (bwrap)"

// earlyRow is EarlyCheck's row for s and f. Pure.
func earlyRow(s EarlySetting, f earlyFacts) isolator.Check {
	off := func(reason, fix string) isolator.Check {
		return isolator.Check{Name: earlyRowName, Status: isolator.Status{State: isolator.Bypassed, Reason: reason, Fix: fix}}
	}
	switch {
	case !s.On:
		// The variable leaves the records as they are (it is often set for one
		// launch): say what is kept, and what removes it.
		reason, fix := "off: "+s.Why, "DEVSANDBOX_EARLY_START=1 turns it on"
		if s.DefaultOn && s.Why != "the default" {
			fix = "unset DEVSANDBOX_EARLY_START (it is on by default), or set it to 1, to turn it on"
		}
		if f.records > 0 {
			reason += fmt.Sprintf("; %d launch records kept in %s, unused while it is off", f.records, f.recordsDir)
			fix += "; `devsandbox sandboxes prune` removes the records no launch used within --days"
		}
		return off(reason, fix)
	case s.KeyOff != "":
		return off(fmt.Sprintf("off: sandbox.early_start = false (%s)", s.KeyOff),
			"remove that setting, or DEVSANDBOX_EARLY_START=0 to turn it off without the cost of a record looked for")
	case f.writableBwrap != "":
		return off(fmt.Sprintf("on (%s), but nothing starts early here: PATH's bubblewrap %s is where you can write (%s), so a sandbox could have put it there, and the early start would run it before any plan can judge it", s.Why, f.writableBwrap, f.writableAt),
			"install bubblewrap where you cannot write (the system's, e.g. /usr/bin/bwrap) and let PATH find that one first; as root every directory is writable, so nothing starts early")
	case !s.Always && f.loadKnown && f.load >= earlyLoad:
		return off(fmt.Sprintf("on (%s), but nothing starts early now: the load average is %.2f per CPU, %.0f or more", s.Why, f.load, earlyLoad),
			"it starts early again once the load falls; DEVSANDBOX_EARLY_START=always ignores the load")
	}
	detail := fmt.Sprintf("on (%s): bwrap starts from the record of the same command line's last launch while the configuration loads", s.Why)
	if f.terminal {
		detail += "; not for a launch whose stdin is a terminal other than this session's controlling terminal and whose stdout is not a terminal, as here"
	} else {
		detail += ", with or without a terminal (never the terminal itself: what devsandbox gives the command in its place)"
	}
	return isolator.Check{Name: earlyRowName, Status: isolator.Status{State: isolator.Active}, Detail: detail}
}
