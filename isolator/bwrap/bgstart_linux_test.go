package bwrap

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
// (bgleader), and a run that leader starts in a process group of its own, in the
// background of that terminal (bgrun): it reports the stdin its command would get.
func init() {
	switch os.Getenv("BWRAP_TEST") {
	case "bgleader":
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = []string{"BWRAP_TEST=bgrun"}
		cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Run(); err != nil {
			fmt.Println(err)
		}
		os.Exit(0)
	case "bgrun":
		f, restore, err := stdinTerminal(os.Stdin, func(string, ...any) {})
		if err != nil {
			fmt.Println(err)
			os.Exit(0)
		}
		fmt.Printf("stdin %s\n", f.Name())
		if restore != nil {
			restore()
		}
		os.Exit(0)
	}
}

// A run started in the background with stdin its controlling terminal
// (`devsandbox -- make &`) gives the command /dev/null: the command never reads keys
// typed for the shell, and one that never reads stdin goes on.
func TestBackgroundStartGetsDevNull(t *testing.T) {
	master, slave, err := tty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer master.Close()
	defer slave.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	cmd.Env = []string{"BWRAP_TEST=bgleader"}
	cmd.Stdin = slave
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Run(); err != nil {
		t.Fatalf("the session leader: %v; output %q", err, out.String())
	}
	if want := "stdin /dev/null\n"; out.String() != want {
		t.Errorf("the background run's command would get %q, want %q", out.String(), want)
	}
}
