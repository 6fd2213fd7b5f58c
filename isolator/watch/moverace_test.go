package watch

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/devsandbox/devsandbox/isolator"
)

// TestMoveAsideConcurrent: two sessions of one project end at once and both find the
// file the sandbox wrote; each moves it aside (here beside it: no quarantine
// directory on the project's file system) and puts back the version from before.
// Whatever the order, what the sandbox wrote must stay in a quarantined file (the
// second must never move the restored file over the first one's quarantined copy),
// and the file in place must be the one from before.
func TestMoveAsideConcurrent(t *testing.T) {
	const bad, good = "[core]\n\tfsmonitor = /tmp/x\n", "[core]\n\tbare = false\n"
	for round := range 300 {
		proj := filepath.Join(t.TempDir(), "proj")
		if err := os.MkdirAll(filepath.Join(proj, ".git"), 0o755); err != nil {
			t.Fatal(err)
		}
		cfg := filepath.Join(proj, ".git", "config")
		if err := os.WriteFile(cfg, []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		p := &isolator.Plan{Project: isolator.Project{Dir: proj}}
		var wg sync.WaitGroup
		start := make(chan struct{})
		for range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				_, _ = (&Watcher{p: p}).moveAside(cfg, []byte(good))
			}()
		}
		close(start)
		wg.Wait()
		ents, err := os.ReadDir(filepath.Join(proj, ".git"))
		if err != nil {
			t.Fatal(err)
		}
		kept := false
		for _, e := range ents {
			if b, _ := os.ReadFile(filepath.Join(proj, ".git", e.Name())); strings.Contains(e.Name(), "quarantine") && string(b) == bad {
				kept = true
			}
		}
		if !kept {
			t.Fatalf("round %d: what the sandbox wrote is in no quarantined file (%d entries in .git)", round, len(ents))
		}
		if b, err := os.ReadFile(cfg); err != nil || string(b) != good {
			t.Fatalf("round %d: .git/config is %q, %v; want the version from before", round, b, err)
		}
	}
}
