//go:build integration

package integration

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
)

// The early-start soak: DEVSANDBOX_IT_EARLY=always (or 1, 0, ...) runs every
// devsandbox the harness starts with DEVSANDBOX_EARLY_START set to it, unless a test
// sets its own (unset: devsandbox's default). With DEVSANDBOX_IT_EARLY_LOG=FILE, with
// or without it, the launches run through run/runBin get --debug: their "early
// start:" lines are appended to FILE under the test's name and every debug line is
// taken out of the stderr the test sees, so that a soak shows which launches matched.
const (
	itEarlyVar    = "DEVSANDBOX_IT_EARLY"
	itEarlyLogVar = "DEVSANDBOX_IT_EARLY_LOG"
)

var earlyLogMu sync.Mutex

// earlyAudited reports whether a launch of bin with args gets --debug for the soak's
// log: only devsandbox itself, launching with the bwrap isolator.
func earlyAudited(bin string, args []string) bool {
	if os.Getenv(itEarlyLogVar) == "" || bin != it.bin {
		return false
	}
	end := slices.Index(args, "--")
	if end < 0 {
		end = len(args)
	}
	return slices.Contains(args[:end], "--isolator=bwrap") && !slices.Contains(args[:end], "--debug") &&
		!slices.Contains(args[:end], "--dry-run")
}

// earlyAudit appends stderr's early-start lines to the soak's log and returns stderr
// without the debug lines.
func earlyAudit(t *testing.T, stderr string) string {
	var kept, notes []string
	lines := strings.SplitAfter(stderr, "\n")
	for _, l := range lines {
		if rest, ok := strings.CutPrefix(l, "devsandbox: debug: "); ok {
			if strings.HasPrefix(rest, "early start: ") {
				notes = append(notes, strings.TrimSpace(rest))
			}
			continue
		}
		if strings.HasPrefix(l, "devsandbox: timings: ") {
			continue
		}
		kept = append(kept, l)
	}
	if len(notes) == 0 {
		notes = []string{"(no early start line)"}
	}
	earlyLogMu.Lock()
	defer earlyLogMu.Unlock()
	f, err := os.OpenFile(os.Getenv(itEarlyLogVar), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		t.Errorf("the early-start soak's log: %v", err)
		return strings.Join(kept, "")
	}
	defer f.Close()
	fmt.Fprintf(f, "%s\t%s\n", t.Name(), strings.Join(notes, " | "))
	return strings.Join(kept, "")
}
