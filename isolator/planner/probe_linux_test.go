package planner

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"syscall"
	"testing"
)

// readDirN reads what os.ReadDir reads: the same names with the same types, at most
// n of them, and the same error for a missing directory.
func TestReadDirNMatchesReadDir(t *testing.T) {
	dir := t.TempDir()
	mkdirs(t, dir+"/sub")
	writeFile(t, dir+"/file", "")
	symlink(t, "file", dir+"/link")
	if err := syscall.Mkfifo(dir+"/fifo", 0o600); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 300; i++ { // more than one small buffer's worth
		writeFile(t, fmt.Sprintf("%s/a-rather-long-file-name-%03d", dir, i), "")
	}
	describe := func(ents []fs.DirEntry) []string {
		var out []string
		for _, e := range ents {
			out = append(out, fmt.Sprintf("%s %v %v", e.Name(), e.Type(), e.IsDir()))
		}
		sort.Strings(out)
		return out
	}
	want, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	got, err := readDirN(dir, 1000)
	if err != nil {
		t.Fatal(err)
	}
	equalLines(t, "entries", describe(got), describe(want))
	if got, err := readDirN(dir, 33); err != nil || len(got) != 33 {
		t.Errorf("readDirN(33) = %d entries, %v", len(got), err)
	}
	if _, err := readDirN(dir+"/missing", 1); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing directory: %v, want not exist", err)
	}
	names, err := listNames(dir)
	if err != nil || len(names) != len(want) {
		t.Errorf("listNames = %d names, %v; want %d", len(names), err, len(want))
	}
}
