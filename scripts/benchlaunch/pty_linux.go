package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"

	"github.com/devsandbox/devsandbox/isolator/tty"
)

// onTerminal gives cmd a new pty as the standard descriptors shape names (each
// of stdin, stdout and stderr a terminal or not: the others are /dev/null) and as
// its controlling terminal, in a session of its own, as a shell in a terminal
// starts a command in the foreground. It returns what to call once cmd has
// exited: it closes this process's slave, waits until the master has read
// everything (end of file once every copy of the slave is closed) and closes it.
func onTerminal(cmd *exec.Cmd, shape ttyShape) (func(), error) {
	master, slave, err := tty.Open()
	if err != nil {
		return nil, fmt.Errorf("-tty: %w", err)
	}
	if err := tty.SetSize(slave.Fd(), tty.Size{Rows: 30, Cols: 100}); err != nil {
		master.Close()
		slave.Close()
		return nil, fmt.Errorf("-tty: %w", err)
	}
	null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		master.Close()
		slave.Close()
		return nil, err
	}
	std := [3]*os.File{null, null, null}
	ctty := -1
	for i, t := range shape {
		if t {
			std[i] = slave
			if ctty < 0 {
				ctty = i
			}
		}
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = std[0], std[1], std[2]
	cmd.SysProcAttr.Setsid, cmd.SysProcAttr.Setctty, cmd.SysProcAttr.Ctty = true, true, ctty
	// The master is non-blocking (tty.Open): read it through the runtime's poller.
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = io.Copy(io.Discard, master)
	}()
	return func() {
		slave.Close()
		null.Close()
		<-done
		master.Close()
	}, nil
}
