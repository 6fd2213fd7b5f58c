package audit

import (
	"os"
	"path/filepath"
	"testing"
)

func TestRotation(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(dir, 400, 3)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 30 {
		if err := l.Write(seqRecord(i)); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
	for i, name := range []string{LogFile, LogFile + ".1", LogFile + ".2", LogFile + ".3"} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil || fi.Size() > 400 || fi.Size() == 0 {
			t.Errorf("file %d: %v, %v", i, fi, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, LogFile+".4")); err == nil {
		t.Error("a fourth rotated file was kept")
	}
	recs, err := ReadLog(dir, LogFilter{})
	if err != nil || len(recs) == 0 {
		t.Fatal(recs, err)
	}
	first := 30 - len(recs)
	for i, r := range recs {
		if r != seqRecord(first+i) {
			t.Fatalf("record %d = %+v, want %+v", i, r, seqRecord(first+i))
		}
	}
	if first == 0 {
		t.Error("nothing was dropped by rotation")
	}
}
