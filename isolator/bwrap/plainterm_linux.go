package bwrap

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/devsandbox/devsandbox/isolator/tty"
	"golang.org/x/sys/unix"
)

// plainTerminals puts a pty of its own (tty.Output) between the command and each of
// its output streams in s that is a terminal, for a run that does not relay the
// user's terminal (its input is not one): the command's descriptor is the pty's
// slave, so it sees a terminal (its colours and layout stay) but can reach neither
// the user's terminal's modes, window size and typed input, nor the terminal
// emulator past the filter (opts). Stdout and stderr on one terminal share one pty,
// so their order holds. Streams that are not terminals (files, pipes) keep their
// descriptors, their bytes unchanged; stdin is left as it is. The slaves are added
// to s's descriptors closed once the child holds them. The returned function waits
// until the command's output is copied (every slave closed); it is nil when no
// stream is a terminal. On error s is unchanged and nothing is left open.
func plainTerminals(s *childStdio, opts tty.FilterOptions) (func() error, error) {
	outs, files, slaves, err := openPlainTerminals(s.files)
	if err != nil || len(outs) == 0 {
		return nil, err
	}
	closeAll, err := outs.start(opts)
	if err != nil {
		closeFiles(slaves)
		return nil, err
	}
	s.files = files
	s.closeAfter = append(s.closeAfter, slaves...)
	return closeAll, nil
}

// plainOutputs are plainTerminals' ptys, allocated (tty.OpenOutput) and not yet
// copied: an early start allocates them before the configuration says how to filter.
type plainOutputs []*tty.Output

// openPlainTerminals allocates plainTerminals' pty for each output stream in files
// that is a terminal (one for stdout and stderr on one terminal) and returns them,
// not started, files with each such stream replaced by its pty's slave, and the
// slaves. On error nothing is left open.
func openPlainTerminals(orig [3]*os.File) (outs plainOutputs, files [3]*os.File, slaves []*os.File, err error) {
	files = orig
	for i := 1; i <= 2; i++ {
		f := orig[i]
		if f == nil || !tty.IsTerminal(f.Fd()) {
			continue
		}
		if i == 2 && files[1] != orig[1] && (f == orig[1] || sameTerminal(orig[1], f)) {
			files[2] = files[1]
			continue
		}
		slave, o, err := tty.OpenOutput(f)
		if err != nil {
			closeFiles(slaves)
			_ = outs.close()
			return nil, orig, nil, outputError(err)
		}
		outs, slaves = append(outs, o), append(slaves, slave)
		files[i] = slave
	}
	return outs, files, slaves, nil
}

// start starts copying each pty to its terminal through a filter with opts. It
// returns what waits until the command's output is copied (plainTerminals); on
// error every pty is closed.
func (outs plainOutputs) start(opts tty.FilterOptions) (func() error, error) {
	for _, o := range outs {
		if err := o.Start(opts); err != nil {
			_ = outs.close()
			return nil, outputError(err)
		}
	}
	return outs.close, nil
}

// close closes every pty, started or not (tty.Output.Close).
func (outs plainOutputs) close() error {
	var errs []error
	for _, o := range outs {
		errs = append(errs, o.Close())
	}
	return errors.Join(errs...)
}

func outputError(err error) error {
	return fmt.Errorf("allocating a terminal for the command's output, which devsandbox filters on its way to yours: %w; redirect the output to a file or a pipe to run without one", err)
}

func closeFiles(fs []*os.File) {
	for _, f := range fs {
		f.Close()
	}
}

// pagerEnv is env for a command whose stdout is a pty of plainTerminals': with
// PAGER=cat unless env sets PAGER. No key reaches a pager there (the pty is write-only),
// so a pager would show its first screen and end; programs that page through $PAGER
// (git without core.pager, man, systemctl, gh) then write all their output, as they
// do when stdout is a pipe (docker, krun). A PAGER the user set (env.set,
// env.passthrough) is theirs.
func pagerEnv(env []string) []string {
	for _, e := range env {
		if strings.HasPrefix(e, "PAGER=") {
			return env
		}
	}
	return append(env, "PAGER=cat")
}

// sameTerminal reports whether the terminals a and b are one device.
func sameTerminal(a, b *os.File) bool {
	var sa, sb unix.Stat_t
	if unix.Fstat(int(a.Fd()), &sa) != nil || unix.Fstat(int(b.Fd()), &sb) != nil {
		return false
	}
	return sa.Mode&unix.S_IFMT == unix.S_IFCHR && sb.Mode&unix.S_IFMT == unix.S_IFCHR && sa.Rdev == sb.Rdev
}
