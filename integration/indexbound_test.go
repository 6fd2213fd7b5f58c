//go:build integration

package integration

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/devsandbox/devsandbox/internal/procs"
)

// TestIndexReadBounded: the watch reads the project's git index on the host while
// the sandbox runs, outside every limit the sandbox has. A sandbox that writes a
// 384 MiB index (6,000,000 empty entries, a sparse file) and touches it every
// 200 ms must not make devsandbox hold it in memory at each change (whatever
// limits.memory the sandbox has): before, its resident set grew past 1 GiB.
func TestIndexReadBounded(t *testing.T) {
	forEachIsolator(t, func(t *testing.T, iso string) {
		p := newProject(t)
		cmd := command(t.Context(), p.dir, baseEnv(), "--isolator="+iso, "--", "/bin/sh", "-c", `set -e
			printf 'DIRC\000\000\000\002\000\133\215\200' > .git/index.new
			truncate -s 384M .git/index.new && mv .git/index.new .git/index
			i=0; while [ $i -lt 15 ]; do touch .git/index; sleep 0.2; i=$((i+1)); done
			echo planted`)
		// The watch runs in devsandbox (bwrap) or in its docker or krun program:
		// the peak of every process run from devsandbox's directory counts.
		stop, peak := make(chan struct{}), make(chan int64)
		go func() {
			var most int64
			for {
				most = max(most, hostPeakKiB(filepath.Dir(it.bin)))
				select {
				case <-stop:
					peak <- most
					return
				case <-time.After(50 * time.Millisecond):
				}
			}
		}()
		start := time.Now()
		out, err := cmd.CombinedOutput()
		close(stop)
		most := <-peak
		if err != nil || !strings.Contains(string(out), "planted") {
			t.Fatalf("the run: %v\n%s", err, out)
		}
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			most = max(most, ru.Maxrss)
		}
		t.Logf("%s: peak resident set %d MiB, %v", iso, most>>10, time.Since(start).Round(time.Millisecond))
		if most > 200<<10 {
			t.Errorf("devsandbox reached a resident set of %d MiB reading the index the sandbox wrote", most>>10)
		}
	})
}

// hostPeakKiB is the largest peak resident set (VmHWM, KiB) of the processes running
// a program from dir.
func hostPeakKiB(dir string) int64 {
	var most int64
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		if exe, err := os.Readlink("/proc/" + e.Name() + "/exe"); err != nil || filepath.Dir(exe) != dir {
			continue
		}
		pid, _ := strconv.Atoi(e.Name())
		n, _ := strconv.ParseInt(strings.TrimSuffix(procs.Status(pid)["VmHWM"], " kB"), 10, 64)
		most = max(most, n)
	}
	return most
}
