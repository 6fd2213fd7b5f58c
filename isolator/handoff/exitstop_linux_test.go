package handoff

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/isolator/internal/jobstop"
)

// The test binary plays a program whose run is over (exithold): its command ran,
// the run ended its freeze function as docker's, krun's and a kept container's
// runs do when they return, and the program is held at its exit (the container's
// removal, its own teardown) until the caller's next forwarded signal.
func init() {
	if os.Getenv("HANDOFF_TEST") != "exithold" {
		return
	}
	os.Exit(Serve(func(j *Job) Result {
		j.Freezer.Set(func(stop bool) bool {
			fmt.Fprintf(os.Stderr, "freeze(%v) after the run\n", stop)
			return false
		})
		j.Freezer.End() // the run is over: the command has ended
		fmt.Println("held")
		<-j.Signals // held at its exit: the caller's signal, sent after the stop, lets it go
		return Result{Code: 7}
	}, os.Stdin, os.Stdout, os.Stderr))
}

// Ctrl-Z while the program is exiting, its command over (the helper removes the
// container, writes its result, exits), is not a stop: the program does not stop
// itself, so devsandbox, which sees it exit instead, does not stop either, and the
// run ends with the command's status, as a native command that exits as Ctrl-Z comes
// is reported exited. Stopped, the program held the run's end (the container's
// removal) and the shell showed a job stopped whose command was over. The program
// is held at its exit by its own handler, which goes on only on the caller's
// forwarded signal, sent after the stop: the program's one reader of the control
// pipe takes the two in order, so the stop is handled while the program is held.
func TestStopAtTheProgramsExitIsNotAStop(t *testing.T) {
	out, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	p, err := Start(context.Background(), Program{
		Path:  os.Args[0],
		Env:   []string{"HANDOFF_TEST=exithold", "GORACE=atexit_sleep_ms=0"},
		Stdio: isolator.Stdio{Out: w, Err: os.Stderr},
	}, Request{Op: "run"})
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	pid := p.cmd.Process.Pid
	exited := false
	var werr error
	defer func() {
		if !exited {
			_ = p.cmd.Process.Kill()
			_ = syscall.Kill(pid, syscall.SIGCONT)
			<-p.done
		}
	}()
	if line, err := bufio.NewReader(out).ReadString('\n'); line != "held\n" {
		t.Fatalf("the program said %q (%v), want held", line, err)
	}
	p.Signal(JobStop)                 // Ctrl-Z, as the program exits
	p.Signal(Signal(syscall.SIGUSR1)) // then its exit goes on
	var warned []string
	j := &callerJob{warn: func(m string) { warned = append(warned, m) }, wait: 30 * time.Second}
	stopped := j.stopProgram(p)
	st := jobstop.GroupState(strconv.Itoa(pid))
	if warned = withoutNote(warned); stopped || len(warned) != 0 {
		t.Fatalf("Ctrl-Z as the program exited, its command over: stopProgram = %v (warned %q), the program's state %q: want it seen gone, not stopped (devsandbox would show a stopped job whose command is over)", stopped, warned, st)
	}
	select {
	case werr = <-p.done:
		exited = true
	case <-time.After(30 * time.Second):
		t.Fatalf("the program did not exit (state %q)", jobstop.GroupState(strconv.Itoa(pid)))
	}
	r, err := p.Result(werr)
	if err != nil || r.Code != 7 {
		t.Fatalf("the run's result: %+v, %v; want the command's status 7", r, err)
	}
	if left := stoppedChildren(); len(left) > 0 {
		t.Errorf("stopped processes left behind: %v", left)
	}
}

// stoppedChildren lists this process's children that are stopped.
func stoppedChildren() []string {
	var left []string
	ents, _ := os.ReadDir("/proc")
	me := strconv.Itoa(os.Getpid())
	for _, e := range ents {
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) > 1 && f[1] == me && (f[0] == "T" || f[0] == "t") {
			left = append(left, e.Name()+" "+s[:i+1])
		}
	}
	return left
}
