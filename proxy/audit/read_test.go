package audit

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

func seqRecord(i int) Record {
	return Record{Time: time.Unix(int64(i), 0).UTC(), Method: "GET", Host: fmt.Sprintf("h%02d.test", i), Port: 80, Decision: DecisionAllow}
}

func TestReadLogFilterAndMissing(t *testing.T) {
	recs, err := ReadLog(filepath.Join(t.TempDir(), "none"), LogFilter{})
	if err != nil || len(recs) != 0 {
		t.Fatalf("missing log: %v, %v", recs, err)
	}
	dir := t.TempDir()
	l, _ := Open(dir, 1<<20, 3)
	all := []Record{
		{Time: time.Unix(1, 0).UTC(), Session: "a", Host: "x.test", Decision: DecisionAllow},
		{Time: time.Unix(2, 0).UTC(), Session: "a", Host: "y.test", Decision: DecisionDeny},
		{Time: time.Unix(3, 0).UTC(), Session: "b", Host: "Y.test", Decision: DecisionDeny},
	}
	for _, r := range all {
		l.Write(r)
	}
	l.f.WriteString(`{"time": "cut short`) // a torn last line is skipped
	l.Close()
	tests := []struct {
		f    LogFilter
		want []Record
	}{
		{LogFilter{}, all},
		{LogFilter{Denied: true}, all[1:]},
		{LogFilter{Session: "a"}, all[:2]},
		{LogFilter{Host: "y.test"}, all[1:]},
		{LogFilter{Since: time.Unix(3, 0)}, all[2:]},
	}
	for _, tt := range tests {
		got, err := ReadLog(dir, tt.f)
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("ReadLog(%+v) = %v, %v; want %v", tt.f, got, err, tt.want)
		}
	}
}

func TestFollow(t *testing.T) {
	dir := t.TempDir()
	l, _ := Open(dir, 300, 3)
	l.Write(seqRecord(0))
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan Record, 100)
	done := make(chan error)
	go func() { done <- Follow(ctx, dir, LogFilter{}, func(r Record) { got <- r }) }()
	expect := func(i int) {
		t.Helper()
		select {
		case r := <-got:
			if r != seqRecord(i) {
				t.Fatalf("got %+v, want %+v", r, seqRecord(i))
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("record %d never came", i)
		}
	}
	expect(0)
	for i := 1; i < 16; i += 5 { // several rotations between two polls
		for j := range 5 {
			l.Write(seqRecord(i + j))
		}
		for j := range 5 {
			expect(i + j)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	l.Close()
}
