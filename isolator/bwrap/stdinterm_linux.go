package bwrap

import (
	"fmt"
	"os"
	"strconv"

	"github.com/devsandbox/devsandbox/isolator/internal/jobstop"
	"github.com/devsandbox/devsandbox/isolator/tty"
	"golang.org/x/sys/unix"
)

// stdinTerminal prepares in, the command's stdin, for a run that does not relay the
// user's terminal. When in is not a terminal it returns in and a nil restore. When it
// is one (`devsandbox -- cmd > out.log`, `devsandbox -- cmd | less`), the command
// reads its input from it, as it would unsandboxed, but gets a read-only descriptor
// it cannot write escape sequences to nor reopen for writing: /dev/tty opened for
// reading, when in is this process's controlling terminal (the usual case, and one
// where the terminal may belong to another user: sudo -u). In the sandbox, which has
// no controlling terminal (--new-session), a reopen of that descriptor through
// /proc/self/fd opens /dev/tty again and fails (ENXIO), a chmod of it reaches
// /dev/tty's node, which is root's. Otherwise (another session's terminal) it is
// reopened read-only through /proc/self/fd (the command's writes to fd 0 fail, a
// deliberate reopen for writing does not), or where that is refused (another user's
// terminal) handed as it is; each of those says so through warn.
//
// A run started in the background (devsandbox not in the terminal's foreground
// process group) gets /dev/null instead, as a read of the terminal would stop it
// (jobControl) while a command that never reads stdin should go on.
//
// restore, to call once nothing of the sandbox runs, puts back the terminal's
// modes, window size, exclusive mode, stopped output and file mode as they were
// before (tty.State), whatever the command did, and closes the read-only copy.
func stdinTerminal(in *os.File, warn func(format string, args ...any)) (f *os.File, restore func(), err error) {
	if in == nil || !tty.IsTerminal(in.Fd()) {
		return in, nil, nil
	}
	ctty, background := jobstop.Terminal(in) // one open of /dev/tty for both questions
	if background {
		ctty.Close()
		// As a POSIX shell without job control gives an asynchronous command: the
		// command cannot read keys typed for the shell, and one that never reads
		// stdin (a build run with &) goes on as it would unsandboxed.
		null, err := os.Open(os.DevNull)
		if err != nil {
			return nil, nil, fmt.Errorf("opening %s for the stdin of a run started in the background: %w", os.DevNull, err)
		}
		return null, func() { null.Close() }, nil
	}
	st, err := tty.SaveState(in.Fd())
	if err != nil {
		if ctty != nil {
			ctty.Close()
		}
		return nil, nil, fmt.Errorf("saving the state of the terminal on stdin, which devsandbox restores after the run: %w; redirect stdin from a file or a pipe to run without it", err)
	}
	f = readOnlyTerminal(in, ctty, warn)
	restore = func() {
		if err := st.Restore(); err != nil {
			warn("the terminal on stdin may be left as the command set it: %v; `stty sane` resets its modes", err)
		}
		if f != in {
			f.Close()
		}
	}
	return f, restore, nil
}

// readOnlyTerminal is stdinTerminal's descriptor for the terminal in: ctty, the
// controlling terminal opened read-only, when in is that (jobstop.Terminal).
func readOnlyTerminal(in, ctty *os.File, warn func(format string, args ...any)) *os.File {
	if ctty != nil {
		return ctty
	}
	self := "/proc/self/fd/" + strconv.Itoa(int(in.Fd()))
	fd, err := unix.Open(self, unix.O_RDONLY|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		warn("stdin is a terminal that is not this session's controlling terminal, and reopening it read-only was refused (%v): the sandboxed command gets it as it is, and can write to it (escape sequences reach your terminal); its modes are restored after the run. Redirect stdin (< /dev/null, < file) or start devsandbox from that terminal's own session", err)
		return in
	}
	warn("stdin is a terminal that is not this session's controlling terminal: the sandboxed command gets it read-only, but could reopen it for writing through /proc/self/fd/0 (escape sequences would reach your terminal); its modes are restored after the run. Redirect stdin (< /dev/null, < file) or start devsandbox from that terminal's own session")
	return os.NewFile(uintptr(fd), self)
}
