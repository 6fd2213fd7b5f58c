package handoff

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/devsandbox/devsandbox/isolator/tty"
)

// The test binary plays a session leader whose controlling terminal is its stdin
// (bgleader), and a job that leader starts in a process group of its own, in the
// background of that terminal (bgjob).
func init() {
	switch os.Getenv("HANDOFF_TEST") {
	case "bgleader":
		os.Exit(bgLeader())
	case "bgjob":
		in := backgroundStdin(os.Stdin)
		fmt.Printf("stdin %s\n", in.Name())
		if restore := saveTerminal(os.Stdin); restore != nil {
			restore()
		}
		fmt.Println("restored")
		os.Exit(0)
	}
}

// bgLeader starts the job in the background of its terminal and reports whether it
// was stopped (a background process that sets the terminal's modes is sent SIGTTOU).
func bgLeader() int {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = []string{"HANDOFF_TEST=bgjob"}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		fmt.Println(err)
		return 1
	}
	var ws syscall.WaitStatus
	if _, err := syscall.Wait4(cmd.Process.Pid, &ws, syscall.WUNTRACED, nil); err != nil {
		fmt.Println(err)
		return 1
	}
	if ws.Stopped() {
		fmt.Printf("the job was stopped by %v\n", ws.StopSignal())
		_ = cmd.Process.Kill()
	}
	return 0
}

// A program started in the background with stdin its controlling terminal
// (`devsandbox -- make &`) gives the command /dev/null, so the command never reads
// keys typed for the shell, and leaves the terminal's modes alone when they did not
// change: setting them from the background would stop devsandbox (SIGTTOU), a build
// run with & included, for as long as nobody brings it to the foreground.
func TestBackgroundStartOnTerminal(t *testing.T) {
	master, slave, err := tty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer master.Close()
	defer slave.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	cmd.Env = []string{"HANDOFF_TEST=bgleader"}
	cmd.Stdin = slave
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Run(); err != nil {
		t.Fatalf("the session leader: %v; output %q", err, out.String())
	}
	if want := "stdin /dev/null\nrestored\n"; out.String() != want {
		t.Errorf("the background job said %q, want %q", out.String(), want)
	}
}
