package bwrap

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/devsandbox/devsandbox/isolator"
)

// Doctor's trial sandboxes (Check's, mountCost's) end with their whole process
// group when their bound ends, as Run's bwrap does: bwrap's child in its setup is in
// bwrap's group, with no parent-death signal yet, and waits for ever for a parent
// killed before it let the child go on. The stand-in bwrap leaves a background
// process in its group (no descriptor of the trial's) and blocks.
func TestTrialEndsItsGroup(t *testing.T) {
	for _, tc := range []struct {
		name string
		run  func(ctx context.Context, bin string)
	}{
		{"Check", func(ctx context.Context, bin string) {
			// An empty plan: the stand-in lies where the test may write.
			b := &Isolator{Path: bin, Planned: &isolator.Plan{}}
			if st := b.Check(ctx); st.State == isolator.Active {
				t.Errorf("Check: a trial sandbox stopped by its bound is active")
			}
		}},
		{"mountCost", func(ctx context.Context, bin string) {
			if _, ok := mountCost(ctx, bin); ok {
				t.Errorf("mountCost: a trial stopped by its bound measured a cost")
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			pidFile := filepath.Join(dir, "left")
			bin := filepath.Join(dir, "bwrap")
			script := "#!/bin/sh\n" +
				"case \"$1\" in --version) echo bubblewrap 0.8.0; exit 0;; esac\n" +
				"sleep 1000 </dev/null >/dev/null 2>&1 &\n" +
				"echo $! >" + pidFile + ".tmp && mv " + pidFile + ".tmp " + pidFile + "\n" +
				"exec sleep 1000\n"
			if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			tc.run(ctx, bin)
			b, err := os.ReadFile(pidFile)
			if err != nil {
				t.Fatalf("the stand-in bwrap did not start its background process: %v", err)
			}
			left, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil {
				t.Fatal(err)
			}
			pidfd, err := unix.PidfdOpen(left, 0)
			if err != nil {
				return // gone and reaped
			}
			defer unix.Close(pidfd)
			if n, _ := unix.Poll([]unix.PollFd{{Fd: int32(pidfd), Events: unix.POLLIN}}, 0); n == 0 {
				cmdline, _ := os.ReadFile("/proc/" + strconv.Itoa(left) + "/cmdline")
				_ = unix.PidfdSendSignal(pidfd, syscall.SIGKILL, nil, 0)
				t.Errorf("the trial's process %d (%q) is still running after the trial returned", left, cmdline)
			}
		})
	}
}
