package bwrap

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/devsandbox/devsandbox/isolator/tmpdir"
)

// TestLostSessionWarnsOnce: a session /tmp removed (or replaced) on the host while the
// sandbox ran is told with one warning at the end of the run, with this text, however
// often and from however many goroutines the two end steps run (Run calls the first
// from readiness.gone and again from the second); a session dir still in place gets
// none. The detection itself is tmpdir's TestLost.
func TestLostSessionWarnsOnce(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(path string) error
		warned bool
	}{
		{"kept", func(string) error { return nil }, false},
		{"removed", os.RemoveAll, true},
		{"replaced", func(p string) error {
			if err := os.RemoveAll(p); err != nil {
				return err
			}
			return os.Mkdir(p, 0o700)
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sess, err := tmpdir.Acquire(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			if err := tc.change(sess.Path); err != nil {
				t.Fatal(err)
			}
			var mu sync.Mutex
			var got []string
			warn := func(format string, args ...any) {
				mu.Lock()
				defer mu.Unlock()
				got = append(got, fmt.Sprintf(format, args...))
			}
			released := make(chan struct{})
			remove, closeAll, _ := endSession(sess, warn, released)
			var wg sync.WaitGroup
			for _, step := range []func(){remove, remove, closeAll, remove, closeAll} {
				wg.Add(1)
				go func() { defer wg.Done(); step() }()
			}
			wg.Wait()
			<-released
			var want []string
			if tc.warned {
				want = []string{"the session /tmp " + sess.Path + " was removed on the host while the sandbox ran; files the command had in /tmp were lost with it"}
			}
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("warnings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			if _, err := os.Lstat(sess.Path); !os.IsNotExist(err) {
				t.Errorf("the session /tmp is still there after the run (%v)", err)
			}
		})
	}
}

// TestEndSessionFinish: Run's last step starts closeAll on a goroutine of its own only
// when nothing has begun it; after the goroutine that saw the init exit ran it (the
// usual end of a run), the exit path starts no goroutine, and released is closed and
// the session /tmp gone either way.
func TestEndSessionFinish(t *testing.T) {
	for _, tc := range []struct {
		name   string
		before bool // closeAll ran before finish, as readiness.gone runs it
		spawns int
	}{
		{"the init's exit seen", true, 0},
		{"nothing seen", false, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sess, err := tmpdir.Acquire(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			released := make(chan struct{})
			_, closeAll, finish := endSession(sess, func(string, ...any) {}, released)
			if tc.before {
				closeAll()
			}
			spawns := 0
			finish(func(f func()) { spawns++; go f() })
			if spawns != tc.spawns {
				t.Errorf("finish started closeAll on %d goroutines, want %d", spawns, tc.spawns)
			}
			<-released
			if _, err := os.Lstat(sess.Path); !os.IsNotExist(err) {
				t.Errorf("the session /tmp is still there after the run (%v)", err)
			}
		})
	}
}
