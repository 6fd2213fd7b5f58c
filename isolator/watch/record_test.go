package watch

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/devsandbox/devsandbox/isolator"
)

// TestRecordConcurrent: the gitdir chain record is read by the next run's planner,
// which fails the run when it differs from the chain it finds. A session that starts
// while another (its first) writes the record must read the whole record or none:
// an empty or partial one is a false alarm that stops the run.
func TestRecordConcurrent(t *testing.T) {
	const pointers = "/home/u/repo/.git/worktrees/proj\n/home/u/repo/.git\n"
	for round := range 300 {
		rec := filepath.Join(t.TempDir(), "state", "git-pointers")
		p := &isolator.Plan{Git: isolator.GitWatch{PointerRecord: rec, Pointers: pointers}}
		var wg sync.WaitGroup
		start := make(chan struct{})
		for range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				(&Watcher{p: p}).record()
			}()
		}
		var bad []string
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for range 200 {
				if b, err := os.ReadFile(rec); err == nil && string(b) != pointers {
					bad = append(bad, string(b))
				}
			}
		}()
		close(start)
		wg.Wait()
		if len(bad) > 0 {
			t.Fatalf("round %d: a reader found the record as %q, want %q or no record", round, bad[0], pointers)
		}
		if b, err := os.ReadFile(rec); err != nil || string(b) != pointers {
			t.Fatalf("round %d: the record is %q, %v; want %q", round, b, err, pointers)
		}
	}
}
