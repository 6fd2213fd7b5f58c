package main

import (
	"bufio"
	"fmt"
	"os/exec"
	"strconv"
	"syscall"
	"time"

	"github.com/devsandbox/devsandbox/scripts/benchrun"
)

// busySession is a kept session that holds n sleeping processes in the project's kept
// container while the warm runs measure: each warm run's session registers with the
// container's keeper, which lists the container's processes before the command
// starts (and again at the session's end), as it does where an editor, a language
// server or a build runs in another session. The runs share the kept container: kept
// is their argv up to the command.
type busySession struct{ cmd *exec.Cmd }

// startBusy starts the session and returns once its n processes run.
func startBusy(r benchrun.Runner, kept []string, n int) (*busySession, error) {
	script := `i=0; while [ $i -lt ` + strconv.Itoa(n) + ` ]; do sleep 3600 & i=$((i+1)); done; echo ready; wait`
	argv := append(append([]string(nil), kept[:len(kept)-1]...), "sh", "-c", script)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir, cmd.Env = r.Dir, r.Env
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: r.Cred}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting the busy session: %w", err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || line != "ready\n" {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, fmt.Errorf("the busy session did not start its %d processes (%q, %v)", n, line, err)
	}
	return &busySession{cmd: cmd}, nil
}

// stop ends the session and returns once devsandbox has: SIGTERM reaches the
// command, and the session's init ends what it started before it exits; SIGKILL
// after 10 s. Later calls do nothing.
func (b *busySession) stop() {
	if b == nil || b.cmd == nil {
		return
	}
	_ = b.cmd.Process.Signal(syscall.SIGTERM)
	t := time.AfterFunc(10*time.Second, func() { _ = b.cmd.Process.Kill() })
	_ = b.cmd.Wait()
	t.Stop()
	b.cmd = nil
}
