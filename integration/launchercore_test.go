//go:build integration

package integration

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestLauncherCoreDumpHoldsNoSecret crashes devsandbox mid-run the way a Go program
// dumps core: GOTRACEBACK=crash (a developer's setting) with `ulimit -c unlimited`,
// then SIGABRT. devsandbox holds the run's secrets (here an `-e` value), so its core
// would hold them, and with the kernel's default core_pattern ("core", relative) the
// core lands in devsandbox's working directory: the project, which this sandbox and
// every later one reads and writes. No file under the project or its scratch
// siblings may hold the secret after the crash.
func TestLauncherCoreDumpHoldsNoSecret(t *testing.T) {
	pattern, err := os.ReadFile("/proc/sys/kernel/core_pattern")
	if err != nil {
		t.Fatal(err)
	}
	if strings.HasPrefix(string(pattern), "|") {
		// A pipe's helper stores cores where only root reads them: nothing to attack.
		t.Skipf("core_pattern is a pipe (%q): cores do not land in the working directory", strings.TrimSpace(string(pattern)))
	}
	// The child inherits the soft limit of this process (Go's exec sets none).
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_CORE, &old); err != nil {
		t.Fatal(err)
	}
	raised := old
	raised.Cur = old.Max
	if err := syscall.Setrlimit(syscall.RLIMIT_CORE, &raised); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Setrlimit(syscall.RLIMIT_CORE, &old) })
	if raised.Cur == 0 {
		t.Skip("the hard RLIMIT_CORE is 0: no process of this user can dump core")
	}
	const secret = "core-dump-secret-5c1f0e9b"
	forEachIsolator(t, func(t *testing.T, iso string) {
		p := newProject(t)
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		env := baseEnv("GOTRACEBACK=crash", "RT_SECRET="+secret)
		cmd := command(ctx, p.dir, env, "--isolator="+iso, "-e", "RT_SECRET", "--", "/bin/sh", "-c", "echo ready; sleep 1000")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		lr := startLines(t, cmd)
		lr.waitFor("ready")
		if err := cmd.Process.Signal(syscall.SIGABRT); err != nil {
			t.Fatal(err)
		}
		err := cmd.Wait()
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Fatalf("devsandbox did not fail after SIGABRT: %v\n%s", err, stderr.String())
		}
		ws := ee.Sys().(syscall.WaitStatus)
		if !ws.Signaled() && ws.ExitStatus() != 2 {
			t.Fatalf("devsandbox did not crash on SIGABRT (%v)\n%s", ws, stderr.String())
		}
		var holders []string
		_ = filepath.WalkDir(p.root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || !d.Type().IsRegular() {
				return nil
			}
			b, err := os.ReadFile(path)
			if err == nil && bytes.Contains(b, []byte(secret)) {
				holders = append(holders, path)
			}
			return nil
		})
		if len(holders) > 0 {
			t.Errorf("after devsandbox crashed (core dumped: %v), the secret is in %v: the sandbox reads the project", ws.CoreDump(), holders)
		}
		if strings.Contains(stderr.String(), secret) {
			t.Errorf("the crash output shows the secret:\n%s", stderr.String())
		}
	})
}
