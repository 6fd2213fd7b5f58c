//go:build integration

package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDeepTreeRemoved: a sandbox nests directories in its /tmp and its home deeper
// than devsandbox's open-file limit (a loop of mkdir and cd), with a locked
// directory (000) half way down; the run's end removes the session /tmp (bwrap's, in
// devsandbox's state) and `sandboxes rm` the home, each in full, and no warning
// prints the nested path. devsandbox runs with 512 open files (prlimit), so 700
// levels pass it; a host's own limit (20000 here, a systemd session's 524288) is
// the same wall further down. Before, the removal stopped with "too many open files"
// and left the tree on the host for good. On krun the limited run may be the one that
// starts podman's service, with hard nofile 512: the next krun run (another test's)
// would restart that idle service with its own limit (TestKrunServiceLowLimit), and
// the test stops it at its end (stopLowServices), so the order of the tests does not
// matter.
func TestDeepTreeRemoved(t *testing.T) {
	forEachIsolator(t, func(t *testing.T, iso string) {
		p := newProject(t)
		if iso == "krun" {
			stopLowServices(t, suiteServiceSocket())
		}
		// 700 levels of d, the locked directory in the 351st: two `mkdir -p` of a
		// relative path (each under PATH_MAX) rather than a mkdir process per level
		// (1,400 processes a run).
		down := func(n int) string { return strings.TrimSuffix(strings.Repeat("d/", n), "/") }
		nest := func(dir string) string {
			return `cd ` + dir + ` && mkdir -p ` + down(351) + ` && cd ` + down(351) + ` && mkdir locked && echo x > locked/f && chmod 000 locked && mkdir -p ` + down(349) + ` && cd ` + down(349) + ` && echo x > f`
		}
		script := nest("/tmp") + ` && ` + nest("$HOME") + ` && echo nested`
		// The variants' arguments and environment (docker-remote's engine), then
		// devsandbox under prlimit.
		args, env := isolatorArgs([]string{"--isolator=" + iso, "--", "/bin/sh", "-c", script}, nil)
		limited := func(args ...string) result {
			return runBin(t, "/usr/bin/prlimit", p.dir, env, "", append([]string{"--nofile=512:512", "--", it.bin}, args...)...)
		}
		r := limited(args...)
		if r.code != 0 || strings.TrimSpace(r.stdout) != "nested" {
			t.Fatalf("the run: %s", r)
		}
		if strings.Contains(r.stderr, "d/d/d/d") || strings.Contains(r.stderr, "could not be removed") {
			t.Errorf("the run's end warned:\n%.600s", r.stderr)
		}
		if iso == "bwrap" {
			tmp := filepath.Join(it.home, ".local/state/devsandbox", p.name(), "tmp")
			if ents, err := os.ReadDir(tmp); err != nil || len(ents) != 0 {
				t.Errorf("the session /tmp was left in %s: %v %v", tmp, ents, err)
			}
		}
		if r := limited("sandboxes", "rm", p.name()); r.code != 0 {
			t.Fatalf("sandboxes rm: %.600s", r)
		}
		if _, err := os.Lstat(filepath.Join(it.home, ".local/share/devsandbox", p.name())); !os.IsNotExist(err) {
			t.Errorf("sandboxes rm left the sandbox home: %v", err)
		}
	})
}
