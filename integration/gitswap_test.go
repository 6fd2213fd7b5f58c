//go:build integration

package integration

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// A concurrent session of the project swaps .git for a symlink to a directory
// outside the project holding a "config" and a "hooks/" of its own (as ~/.ssh holds
// a config) while new sessions launch. The read-only binds that protect the git
// metadata (.git/config, .git/hooks) must be mounted from what devsandbox checked:
// an engine that binds them by path after the swap would show the link's target
// (a host secret) in the sandbox, leave the real config writable under the other
// name, and make mount points where the link leads.
//
// The swap is made here, outside any sandbox: a session that finds a .git binds it
// onto itself, where it cannot be renamed (EBUSY), and the one started before the
// project was a repository (which made .git itself) has its .git link quarantined
// by its watcher within milliseconds; a session that wins that race does what this
// loop does.
func TestGitDirSwap(t *testing.T) {
	forEachIsolator(t, func(t *testing.T, iso string) {
		p := newProject(t)
		if isDocker(iso) {
			t.Cleanup(func() { removeRootOwned(t, filepath.Join(it.home, ".local/share/devsandbox", p.name(), "home")) })
		}
		const realConfig = "[core]\n\trepositoryformatversion = 0\n"
		p.write("proj/.git/hooks/pre-commit", "#!/bin/sh\nexit 0\n")
		p.write("secret/config", "Host canary\n  IdentityFile CANARY-SECRET-CONFIG\n")
		p.write("secret/hooks/pre-commit", "CANARY-SECRET-HOOK\n")
		if err := os.Symlink("../secret", p.path("proj/.git.x")); err != nil {
			t.Fatal(err)
		}
		_ = os.Lchown(p.path("proj/.git.x"), it.uid, it.gid)
		stop, swapped := make(chan struct{}), make(chan error, 1)
		quarantined := 0
		go func() {
			for {
				select {
				case <-stop:
					swapped <- nil
					return
				default:
				}
				err := unix.Renameat2(unix.AT_FDCWD, p.path("proj/.git"), unix.AT_FDCWD, p.path("proj/.git.x"), unix.RENAME_EXCHANGE)
				if err == unix.ENOENT {
					// A launch's watcher quarantined the link it saw at .git: plant
					// it again.
					for _, n := range []string{"proj/.git", "proj/.git.x"} {
						if os.Symlink("../secret", p.path(n)) == nil {
							_ = os.Lchown(p.path(n), it.uid, it.gid)
							quarantined++
						}
					}
					continue
				}
				if err != nil {
					swapped <- err
					return
				}
				time.Sleep(2 * time.Millisecond) // pacing: each state lasts a while
			}
		}()
		launches := map[string]int{"bwrap": 50}[iso]
		if launches == 0 {
			launches = 20
		}
		codes, warned := map[int]int{}, map[string]bool{}
		for i := 0; i < launches; i++ {
			r := p.sandbox(iso, nil, `cat .git/config .git/hooks/* .git.x/config .git.x/hooks/* ../secret/config ../secret/hooks/* 2>/dev/null
for f in .git/config .git.x/config .git/hooks/pre-commit .git.x/hooks/pre-commit; do echo PWNED >> $f; done 2>/dev/null; true`)
			codes[r.code]++
			for _, l := range strings.Split(r.stderr, "\n") {
				if strings.Contains(l, "warning") && !warned[l] {
					warned[l] = true
					t.Logf("launch %d: %s", i, l)
				}
			}
			if strings.Contains(r.stdout, "CANARY") {
				t.Errorf("launch %d read the symlink's target (a host file):\n%s", i, r)
			}
			if r.code != 0 && r.code != 125 {
				t.Fatalf("launch %d:\n%s", i, r)
			}
		}
		close(stop)
		if err := <-swapped; err != nil {
			t.Fatalf("swapping: %v", err)
		}
		t.Logf("%d launches during the swap: exit statuses %v; the link planted again %d times", launches, codes, quarantined)
		if fi, err := os.Lstat(p.path("proj/.git")); err != nil || !fi.IsDir() {
			if err := unix.Renameat2(unix.AT_FDCWD, p.path("proj/.git"), unix.AT_FDCWD, p.path("proj/.git.x"), unix.RENAME_EXCHANGE); err != nil {
				t.Fatalf("the git dir is gone: %v", err)
			}
		}
		// With .git back, a launch runs in the repository and shows its own config
		// (an engine older than API 1.45 elsewhere refuses a writable anchor: .git).
		r := p.sandbox(iso, nil, `cat .git/config`)
		switch {
		case refusesAnchors(iso):
			if r.code != 125 {
				t.Errorf("a launch after the swap on an engine that refuses anchors:\n%s", r)
			}
		case r.code != 0 || r.stdout != realConfig:
			t.Errorf("a launch after the swap, .git back:\n%s", r)
		}
		// The git metadata stayed read-only in every launch: nothing holds what the
		// sandboxes appended, here or in quarantine (a watcher may take the real
		// hook for one the sandbox wrote when the swap shows it anew).
		if b, err := os.ReadFile(p.path("proj/.git/config")); err != nil || string(b) != realConfig {
			t.Errorf(".git/config changed: %q, %v", b, err)
		}
		for _, dir := range []string{p.path("proj/.git"), p.path("secret"), filepath.Join(it.home, ".local/state/devsandbox", p.name())} {
			_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
				if err == nil && d.Type().IsRegular() {
					if b, _ := os.ReadFile(path); strings.Contains(string(b), "PWNED") {
						t.Errorf("a launch wrote to %s: %q", path, b)
					}
				}
				return nil
			})
		}
		// Nothing appeared or changed where the link leads, on the host. (Inside a
		// container the link leads into the sandbox home: a runtime that resolves
		// a destination while .git is the link makes its mount point there, root's
		// or a subordinate uid's — the destination side, which no mount source can
		// pin; the init then stops the run. removeRootOwned logs it.)
		for dir, names := range map[string][]string{"secret": {"config", "hooks"}, "secret/hooks": {"pre-commit"}} {
			ents, err := os.ReadDir(p.path(dir))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, e := range ents {
				got = append(got, e.Name())
			}
			if !slices.Equal(got, names) {
				t.Errorf("the symlink's target on the host changed: %s holds %q (want %q)", dir, got, names)
			}
		}
	})
}
