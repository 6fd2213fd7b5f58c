package audit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"
)

// oldReadLog is ReadLog as it was before EachLog (every record held, then a stable
// sort): the reference the merge must match, byte for byte.
func oldReadLog(dir string, filter LogFilter) ([]Record, error) {
	var out []Record
	for _, name := range logFiles(dir) {
		f, err := os.Open(name)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		_, err = readLines(f, func(r Record, _ []byte) {
			if filter.Match(r) {
				out = append(out, r)
			}
		})
		f.Close()
		if err != nil {
			return nil, err
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Time.Before(out[j].Time) })
	return out, nil
}

// writeMessyLog writes n records into dir's legacy files (two rotations) and
// sessions session files: Times from a few seconds (many ties), out of order within
// each file (a record's Time is its request's start, written at its end), with a
// torn last line and a line that does not parse here and there.
func writeMessyLog(t testing.TB, dir string, n, sessions int, seed uint64) int64 {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 1))
	if err := os.MkdirAll(filepath.Join(dir, LogSubdir), 0o700); err != nil {
		t.Fatal(err)
	}
	names := []string{LegacyLogFile + ".2", LegacyLogFile + ".1", LegacyLogFile}
	for i := range sessions {
		names = append(names, filepath.Join(LogSubdir, fmt.Sprintf("20260101T0000%02d-s%d.jsonl", i, i)))
	}
	bufs := make([]bytes.Buffer, len(names))
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	hosts := []string{"a.test", "B.test", "c.test", "d\x1b[2J.test", "10.0.0.1"}
	for i := range n {
		f := rng.IntN(len(names))
		r := Record{Kind: KindRequest, Time: base.Add(time.Duration(rng.IntN(40)) * 250 * time.Millisecond),
			Session: fmt.Sprintf("s%d", f), Method: "GET", Host: hosts[rng.IntN(len(hosts))], Port: 443,
			Path: fmt.Sprintf("/p/%d/%s", i, strings.Repeat("x", rng.IntN(200))), Decision: DecisionAllow}
		if rng.IntN(3) == 0 {
			r.Decision, r.Rule = DecisionDeny, RuleDefault
		}
		if rng.IntN(50) == 0 {
			r.Time = r.Time.In(time.FixedZone("", 3600)) // another zone, the same instant order
		}
		bufs[f].Write(FormatJSON(r))
		bufs[f].WriteByte('\n')
		if rng.IntN(97) == 0 {
			bufs[f].WriteString("not json\n")
		}
	}
	var total int64
	for i, name := range names {
		if i%2 == 0 {
			bufs[i].WriteString(`{"time": "cut short`)
		}
		if err := os.WriteFile(filepath.Join(dir, name), bufs[i].Bytes(), 0o600); err != nil {
			t.Fatal(err)
		}
		total += int64(bufs[i].Len())
	}
	return total
}

// transcript is what logs proxy prints of recs, in both forms.
func transcript(recs []Record) string {
	var b strings.Builder
	for _, r := range recs {
		b.Write(FormatJSON(r))
		b.WriteByte('\n')
		b.WriteString(FormatText(r, time.UTC))
		b.WriteByte('\n')
	}
	return b.String()
}

// TestEachLogMatchesTheSort: the merge gives what the stable sort of every record
// gave, byte for byte, whether it holds everything (the default budget), spills
// every line, or spills every few; and so does Follow's backlog.
func TestEachLogMatchesTheSort(t *testing.T) {
	dir, small := t.TempDir(), t.TempDir()
	writeMessyLog(t, dir, 3000, 6, 7)
	writeMessyLog(t, small, 300, 4, 8)
	filters := []LogFilter{{}, {Denied: true}, {Host: "b.test"}, {Session: "s4"},
		{Since: time.Date(2026, 1, 1, 0, 0, 5, 0, time.UTC)}}
	cases := []struct {
		dir     string
		budgets []int
	}{
		{dir, []int{SortBudget, 8 << 10, 64 << 10}},
		{small, []int{1}}, // a run per line
	}
	for _, c := range cases {
		dir := c.dir
		for _, f := range filters {
			old, err := oldReadLog(dir, f)
			if err != nil || len(old) == 0 {
				t.Fatalf("the reference read %d records: %v", len(old), err)
			}
			want := transcript(old)
			for _, budget := range c.budgets {
				var got []Record
				if err := eachLog(dir, f, budget, func(r Record) { got = append(got, r) }); err != nil {
					t.Fatal(err)
				}
				if g := transcript(got); g != want {
					t.Errorf("filter %+v, budget %d: %d records, the sort gave %d; first difference at byte %d", f, budget, len(got), len(old), firstDiff(g, want))
				}
				ctx, cancel := context.WithCancel(context.Background())
				cancel() // the backlog only
				got = nil
				if err := follow(ctx, dir, f, budget, func(r Record) { got = append(got, r) }); err != nil {
					t.Fatal(err)
				}
				if g := transcript(got); g != want {
					t.Errorf("Follow's backlog, filter %+v, budget %d: %d records, the sort gave %d; first difference at byte %d", f, budget, len(got), len(old), firstDiff(g, want))
				}
			}
		}
	}
	for _, d := range []string{dir, small} {
		if left, _ := filepath.Glob(filepath.Join(d, ".devsandbox-log-sort-*")); len(left) != 0 {
			t.Errorf("temporary files left: %v", left)
		}
	}
}

func firstDiff(a, b string) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// TestEachLogHeapBounded: reading a log many times the budget keeps the live heap
// near the budget, not the log's size (the sort it replaces held every record).
func TestEachLogHeapBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("writes and reads a log of some MiB")
	}
	dir := t.TempDir()
	size := writeMessyLog(t, dir, 60000, 8, 11)
	const budget = 256 << 10
	peak := func(read func(fn func(Record)) error) (uint64, int) {
		var ms runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&ms)
		base, top, n := ms.HeapAlloc, ms.HeapAlloc, 0
		if err := read(func(Record) {
			if n++; n%3000 == 0 {
				runtime.GC()
				runtime.ReadMemStats(&ms)
				top = max(top, ms.HeapAlloc)
			}
		}); err != nil {
			t.Fatal(err)
		}
		return top - min(base, top), n
	}
	grew, n := peak(func(fn func(Record)) error { return eachLog(dir, LogFilter{}, budget, fn) })
	t.Logf("a log of %d bytes, %d records: the live heap grew by at most %d bytes while they were given", size, n, grew)
	if n < 50000 || size < 10<<20 {
		t.Fatalf("the test log is too small to show anything: %d records, %d bytes", n, size)
	}
	if grew > 4*budget+(1<<20) {
		t.Errorf("the live heap grew by %d bytes reading a log of %d bytes with a budget of %d; want it near the budget", grew, size, budget)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	grew, _ = peak(func(fn func(Record)) error { return follow(ctx, dir, LogFilter{}, budget, fn) })
	if grew > 4*budget+(1<<20) {
		t.Errorf("Follow's backlog: the live heap grew by %d bytes with a budget of %d", grew, budget)
	}
}
