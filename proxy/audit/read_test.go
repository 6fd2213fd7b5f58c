package audit

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"
)

func TestReadLogFilterAndMissing(t *testing.T) {
	recs, err := ReadLog(filepath.Join(t.TempDir(), "none"), LogFilter{})
	if err != nil || len(recs) != 0 {
		t.Fatalf("missing log: %v, %v", recs, err)
	}
	dir := t.TempDir()
	a, _ := Open(dir, "a", Options{})
	b, _ := Open(dir, "b", Options{})
	all := []Record{
		{Kind: KindRequest, Time: time.Unix(1, 0).UTC(), Session: "a", Host: "x.test", Decision: DecisionAllow},
		{Kind: KindRequest, Time: time.Unix(2, 0).UTC(), Session: "a", Host: "y.test", Decision: DecisionDeny},
		{Kind: KindRequest, Time: time.Unix(3, 0).UTC(), Session: "b", Host: "Y.test", Decision: DecisionDeny},
		{Kind: KindDropped, Time: time.Unix(4, 0).UTC(), Session: "b", Decision: DecisionDeny, Dropped: 2},
	}
	b.Write(all[2]) // files are read one after the other; records come out by time
	a.Write(all[0])
	a.Write(all[1])
	b.append(all[3])
	a.f.WriteString(`{"time": "cut short`) // a torn last line is skipped
	a.Close()
	b.Close()
	tests := []struct {
		f    LogFilter
		want []Record
	}{
		{LogFilter{}, all},
		{LogFilter{Denied: true}, all[1:]},
		{LogFilter{Session: "a"}, all[:2]},
		{LogFilter{Host: "y.test"}, all[1:3]},
		{LogFilter{Since: time.Unix(3, 0)}, all[2:]},
	}
	for _, tt := range tests {
		got, err := ReadLog(dir, tt.f)
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("ReadLog(%+v) = %v, %v; want %v", tt.f, got, err, tt.want)
		}
	}
}

// TestReadLegacy: the single rotated log of earlier versions is read too, oldest of all.
func TestReadLegacy(t *testing.T) {
	dir := t.TempDir()
	line := func(r Record) []byte { b := FormatJSON(r); return append(b, '\n') }
	legacy := filepath.Join(dir, LegacyLogFile)
	os.WriteFile(legacy+".2", line(seqRecord(1)), 0o600)
	os.WriteFile(legacy+".1", line(seqRecord(2)), 0o600)
	os.WriteFile(legacy, line(seqRecord(3)), 0o600)
	w, _ := Open(dir, "s", Options{})
	w.Write(seqRecord(4))
	w.Close()
	got, err := ReadLog(dir, LogFilter{})
	if want := []Record{seqRecord(1), seqRecord(2), seqRecord(3), seqRecord(4)}; err != nil || !slices.Equal(got, want) {
		t.Errorf("got %v, %v; want %v", got, err, want)
	}
}

// TestFollowNeverLoses: a follower started before three sessions write thousands of
// records as fast as they can sees every one of them, each session's in order, new
// sessions' files included.
func TestFollowNeverLoses(t *testing.T) {
	dir := t.TempDir()
	early, _ := Open(dir, "early", Options{})
	early.Write(seqRecord(0))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	got := map[string][]int{}
	total := 0
	done := make(chan error, 1)
	go func() {
		done <- Follow(ctx, dir, LogFilter{}, func(r Record) {
			mu.Lock()
			got[r.Session] = append(got[r.Session], int(r.Time.Unix()))
			total++
			mu.Unlock()
		})
	}()
	const n = 3000
	var wg sync.WaitGroup
	for _, s := range []string{"s1", "s2", "s3"} {
		wg.Go(func() {
			w, err := Open(dir, s, Options{})
			if err != nil {
				t.Error(err)
				return
			}
			for i := range n {
				r := seqRecord(i)
				r.Session = s
				w.Write(r)
			}
			w.Close()
		})
	}
	wg.Wait()
	early.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		count := total
		mu.Unlock()
		if count == 3*n+1 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, s := range []string{"s1", "s2", "s3"} {
		if len(got[s]) != n {
			t.Errorf("%s: the follower saw %d of %d records", s, len(got[s]), n)
			continue
		}
		for i, v := range got[s] {
			if v != i {
				t.Fatalf("%s: record %d is %d: out of order", s, i, v)
			}
		}
	}
}

// TestPollPartialLine: a line being written is left for the next poll, then read
// once, whole.
func TestPollPartialLine(t *testing.T) {
	dir := t.TempDir()
	w, _ := Open(dir, "s", Options{})
	defer w.Close()
	read := map[string]int64{}
	var got []Record
	collect := func(r Record, _ []byte) { got = append(got, r) }
	line := append(FormatJSON(seqRecord(7)), '\n')
	w.f.Write(line[:10])
	if err := poll(dir, read, collect); err != nil || len(got) != 0 {
		t.Fatalf("half a line: %v, %v", got, err)
	}
	w.f.Write(line[10:])
	poll(dir, read, collect)
	poll(dir, read, collect)
	if len(got) != 1 || got[0] != seqRecord(7) {
		t.Errorf("got %+v", got)
	}
}
