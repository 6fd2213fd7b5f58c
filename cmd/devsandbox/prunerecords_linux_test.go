package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// prune removes the early start's records no launch used within --days, and
// follows nothing: a link named as a record, and what it names, stay.
func TestPruneRecords(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "prestart")
	outside := filepath.Join(t.TempDir(), "victim")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Mkdir(dir, 0o700))
	must(os.WriteFile(outside, []byte("keep"), 0o600))
	old := time.Now().Add(-40 * 24 * time.Hour)
	const stale, recent, link = "0123456789abcdef0123456789abcdef", "00000000000000000000000000000000", "11111111111111111111111111111111"
	for _, n := range []string{stale, recent} {
		must(os.WriteFile(filepath.Join(dir, n), []byte("{}"), 0o600))
	}
	must(os.Chtimes(filepath.Join(dir, stale), old, old))
	must(os.Chtimes(outside, old, old))
	must(os.Symlink(outside, filepath.Join(dir, link)))
	for _, dry := range []bool{true, false} {
		var out bytes.Buffer
		a := &app{stdout: &out, stderr: &out}
		a.pruneRecords(root, 30*24*time.Hour, dry)
		want := verb(dry) + " " + filepath.Join(dir, stale) + ": a launch record of the early start no launch used within --days\n"
		if out.String() != want {
			t.Errorf("dry run %v: output %q, want %q", dry, out.String(), want)
		}
	}
	ents, _ := os.ReadDir(dir)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if strings.Join(names, " ") != recent+" "+link {
		t.Errorf("left %v, want the recent record and the link", names)
	}
	if b, err := os.ReadFile(outside); err != nil || string(b) != "keep" {
		t.Errorf("the link's target: %q, %v", b, err)
	}
}
