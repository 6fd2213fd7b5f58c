package planner

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
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

// TestReadNames: the host's ReadNames lists what os.ReadDir lists, over several
// getdents64 calls too, and fails as it does on a missing directory or a file.
func TestReadNames(t *testing.T) {
	dir := t.TempDir()
	for i := range 700 { // about 20 KiB of records: more than one 8 KiB read
		name := fmt.Sprintf("entry-with-a-longer-name-%04d", i)
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, ".hidden"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/nonexistent", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, e := range ents {
		want = append(want, e.Name())
	}
	got, err := readNames(dir)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("readNames: %d names, want %d (first %q, want %q)", len(got), len(want), got[:min(3, len(got))], want[:3])
	}
	pr := OS(dir)
	if names, err := pr.names(dir); err != nil || !slices.Equal(names, want) {
		t.Errorf("Probe.names: %d names (%v), want %d", len(names), err, len(want))
	}
	if _, err := readNames(filepath.Join(dir, "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing directory: %v, want ErrNotExist", err)
	}
	if _, err := readNames(filepath.Join(dir, "entry-with-a-longer-name-0001")); err == nil {
		t.Error("a file was listed")
	}
}
