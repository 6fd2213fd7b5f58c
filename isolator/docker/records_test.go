package docker

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// The records devsandbox keeps beside the project states (the derived-image cache,
// the engines' API versions) are read and rewritten without following a link: at the
// file, at its temporary file or its lock (names a writer knows in advance), or at the
// directory. A file a link there names is neither read, nor written, nor made.
func TestRecordsFollowNoLink(t *testing.T) {
	victimFile := func(t *testing.T) string {
		t.Helper()
		v := filepath.Join(t.TempDir(), "victim")
		if err := os.WriteFile(v, []byte(`{"planted":"sha256:evil"}`), 0o600); err != nil {
			t.Fatal(err)
		}
		return v
	}
	unchanged := func(t *testing.T, v string) {
		t.Helper()
		if b, err := os.ReadFile(v); err != nil || string(b) != `{"planted":"sha256:evil"}` {
			t.Errorf("the file the link names was written: %q, %v", b, err)
		}
	}
	t.Run("at the file", func(t *testing.T) {
		dir := t.TempDir()
		path, v := filepath.Join(dir, derivedCacheFile), victimFile(t)
		if err := os.Symlink(v, path); err != nil {
			t.Fatal(err)
		}
		if m := readRecords(path); len(m) != 0 {
			t.Errorf("read through the link: %v", m)
		}
		writeRecord(path, "k", "v")
		unchanged(t, v)
		if m := readRecords(path); len(m) != 1 || m["k"] != "v" {
			t.Errorf("the record took in what the link names: %v", m)
		}
		if fi, err := os.Lstat(path); err != nil || !fi.Mode().IsRegular() {
			t.Errorf("the link is still there, or no file: %v %v", fi, err)
		}
	})
	t.Run("at the temporary file", func(t *testing.T) {
		dir := t.TempDir()
		path, v := filepath.Join(dir, derivedCacheFile), victimFile(t)
		// The name the writer used before: PATH.PID.tmp.
		if err := os.Symlink(v, filepath.Join(dir, derivedCacheFile+"."+itoa(os.Getpid())+".tmp")); err != nil {
			t.Fatal(err)
		}
		writeRecord(path, "k", "v")
		unchanged(t, v)
		if m := readRecords(path); m["k"] != "v" {
			t.Errorf("not recorded: %v", m)
		}
	})
	t.Run("at the lock", func(t *testing.T) {
		dir := t.TempDir()
		path, v := filepath.Join(dir, derivedCacheFile), filepath.Join(t.TempDir(), "made")
		if err := os.Symlink(v, path+".lock"); err != nil {
			t.Fatal(err)
		}
		writeRecord(path, "k", "v")
		if _, err := os.Lstat(v); err == nil {
			t.Errorf("the lock's link made %s", v)
		}
	})
	t.Run("at the directory", func(t *testing.T) {
		real, top := t.TempDir(), t.TempDir()
		dir := filepath.Join(top, "devsandbox")
		if err := os.Symlink(real, dir); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(real, derivedCacheFile), []byte(`{"planted":"sha256:evil"}`), 0o600); err != nil {
			t.Fatal(err)
		}
		if m := readRecords(filepath.Join(dir, derivedCacheFile)); len(m) != 0 {
			t.Errorf("read through the directory's link: %v", m)
		}
		writeRecord(filepath.Join(dir, derivedCacheFile), "k", "v")
		if es, _ := os.ReadDir(real); len(es) != 1 {
			t.Errorf("written through the directory's link: %v", es)
		}
	})
}

func itoa(n int) string { return strconv.Itoa(n) }
