//go:build integration

package integration

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestOnePipeKeepsOrder is TestOneFileKeepsOrder's pipe shape, `devsandbox -- cmd
// 2>&1 | tee LOG`: devsandbox's stdout and stderr are one pipe, read by a real tee.
// What tee writes to its log (and its stdout) is byte for byte what it writes when
// the same script runs outside a sandbox, and the command's exit status comes back.
// The one-pipe decision for a pipe is the same-inode rule of isolator.SharedOutput
// (unit-tested); this is the run behind it.
func TestOnePipeKeepsOrder(t *testing.T) {
	script, want, _, _ := oneStreamScript()
	outside, code := teed(t, exec.Command("/bin/sh", "-c", script))
	if code != 3 || !bytes.Equal(outside, want) {
		t.Fatalf("outside a sandbox `sh -c SCRIPT 2>&1 | tee LOG` logged %s (exit %d), want %s", runs(outside), code, runs(want))
	}
	forEachIsolator(t, func(t *testing.T, iso string) {
		p := newProject(t)
		ways := [][]string{nil}
		if iso != "bwrap" && iso != "krun" {
			ways = append(ways, []string{"--keep-container"})
		}
		for _, flags := range ways {
			name := "one-shot"
			if flags != nil {
				name = "kept"
			}
			ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
			args := append(append([]string{"--isolator=" + iso}, flags...), "--", "/bin/sh", "-c", script)
			got, code := teed(t, command(ctx, p.dir, baseEnv(), args...))
			cancel()
			got = ownLines(t, got)
			if code != 3 || !bytes.Equal(got, outside) {
				t.Errorf("%s: `devsandbox -- sh -c SCRIPT 2>&1 | tee LOG` logged %s (exit %d), want %s (exit 3) as outside", name, runs(got), code, runs(outside))
			}
		}
	})
}

// teed runs cmd with its stdout and stderr one pipe into `tee LOG` (as a shell's
// `2>&1 | tee LOG` does), stdin /dev/null, and returns the log and cmd's exit
// status; tee's own stdout must be the log's bytes too.
func teed(t *testing.T, cmd *exec.Cmd) ([]byte, int) {
	t.Helper()
	log := filepath.Join(t.TempDir(), "log")
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	var teeOut bytes.Buffer
	tee := exec.Command("tee", log)
	tee.Stdin, tee.Stdout = r, &teeOut
	if err := tee.Start(); err != nil {
		t.Fatal(err)
	}
	r.Close()
	cmd.Stdout, cmd.Stderr = w, w
	err = cmd.Run()
	w.Close()
	if cmd.ProcessState == nil {
		t.Fatalf("running %q: %v", cmd.Args, err)
	}
	if err := tee.Wait(); err != nil {
		t.Fatalf("tee: %v", err)
	}
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, teeOut.Bytes()) {
		t.Fatalf("tee's log %s and its stdout %s differ", runs(b), runs(teeOut.Bytes()))
	}
	return b, cmd.ProcessState.ExitCode()
}
