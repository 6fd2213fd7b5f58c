package container

import (
	"context"
	"fmt"
	"io"
	"syscall"
	"time"

	"github.com/devsandbox/devsandbox/isolator/sandboxinit/wire"
)

// Pauser pauses and unpauses one container through its engine (the Engine API's
// pause, podman's): the engine freezes every process of the container's cgroup, so
// none can go on, whatever it did to its process group.
type Pauser struct {
	Pause, Unpause func(ctx context.Context) error
}

// pauseBound bounds one call to the engine to pause or unpause.
const pauseBound = 10 * time.Second

// Freeze returns the freeze function of a run's handoff.Freezer: freeze(true)
// pauses the container (pz), freeze(false) unpauses it. Where the engine cannot
// pause (a rootless engine on cgroup v1, podman with cgroupfs), or pz is nil (an exec
// in a kept container, whose pause would freeze the other sessions of the
// container too), the command's process group is stopped instead (SIGSTOP through
// the init, SIGCONT after), and errOut is told so once: a process that left the
// group (its own session) goes on running while devsandbox is stopped. Either way
// the command gets no keys typed meanwhile: devsandbox and its copy of stdin are
// stopped.
func (s *Session) Freeze(pz *Pauser, errOut io.Writer) func(stop bool) {
	paused, told := false, false
	return func(stop bool) {
		ctx, cancel := context.WithTimeout(context.Background(), pauseBound)
		defer cancel()
		if !stop {
			if paused {
				paused = false
				if err := pz.Unpause(ctx); err != nil {
					fmt.Fprintf(errOut, "devsandbox: the engine could not unpause the container: %v; `docker unpause` (podman unpause) goes on with it\n", err)
				}
				return
			}
			_ = s.signal(syscall.SIGCONT)
			return
		}
		if pz != nil {
			err := pz.Pause(ctx)
			if err == nil {
				paused = true
				return
			}
			if !told {
				told = true
				fmt.Fprintf(errOut, "devsandbox: the engine cannot pause the container (%v): while devsandbox is stopped, only the command's process group is stopped; a process that left it goes on running\n", err)
			}
		}
		_ = s.signal(syscall.SIGSTOP)
	}
}

// signal sends sig to the command's process group through the init, once the hello
// is out (no frame may precede it).
func (s *Session) signal(sig syscall.Signal) error {
	select {
	case <-s.stop:
		return nil
	case <-s.helloSent:
	}
	return s.st.Frame(wire.FrameSignal, []byte{byte(sig)})
}
