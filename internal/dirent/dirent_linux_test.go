package dirent

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func TestReadDir(t *testing.T) {
	dir := t.TempDir()
	var want []string
	// More names than one small buffer holds: the reads continue where they stopped.
	for i := 0; i < 40; i++ {
		n := strings.Repeat("n", 1+i%7) + string(rune('a'+i%26)) + string(rune('a'+i/26))
		want = append(want, n)
		if err := os.Mkdir(filepath.Join(dir, n), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("x", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	want = append(want, "link")
	sort.Strings(want)
	var got []string
	types := map[string]byte{}
	if err := ReadDir(dir, 0, func(name string, typ byte) bool {
		got = append(got, name)
		types[name] = typ
		return true
	}); err != nil {
		t.Fatal(err)
	}
	sort.Strings(got)
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("names:\n got %v\nwant %v", got, want)
	}
	if types["link"] != unix.DT_LNK && types["link"] != unix.DT_UNKNOWN {
		t.Errorf("link: d_type %d", types["link"])
	}
	n := 0
	if err := ReadDir(dir, 0, func(string, byte) bool { n++; return n < 3 }); err != nil || n != 3 {
		t.Fatalf("stopping after 3: %d entries, %v", n, err)
	}
	if err := ReadDir(filepath.Join(dir, "missing"), 0, func(string, byte) bool { return true }); !os.IsNotExist(err) {
		t.Fatalf("missing directory: %v", err)
	}
}
