package diskguard

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/devsandbox/devsandbox/internal/mountinfo"
	"github.com/devsandbox/devsandbox/isolator"
)

func TestBelow(t *testing.T) {
	table := mountinfo.Parse([]byte("" +
		"20 1 8:1 / / rw - ext4 /dev/sda1 rw\n" +
		"21 20 0:5 / /proc rw - proc proc rw\n" +
		"30 20 8:2 / /home rw - ext4 /dev/sda2 rw\n" +
		"31 30 0:40 / /home/u/proj/sub rw - tmpfs tmpfs rw\n" + // below the project
		"32 31 0:41 / /home/u/proj/sub/deeper rw - tmpfs tmpfs rw\n" + // below that
		"33 30 0:42 / /home/u/proj rw - tmpfs tmpfs rw\n" + // the project itself: its statfs is it
		"34 30 0:43 / /home/u/projx/y rw - tmpfs tmpfs rw\n" + // beside, not below
		"35 30 0:44 / /home/u/shared/a rw - tmpfs tmpfs rw\n" + // below a bind, then covered
		"36 30 0:45 / /home/u/shared rw - tmpfs tmpfs rw\n" + // covers 35
		"37 36 0:46 / /home/u/shared/b rw - tmpfs tmpfs rw\n" + // on the cover: reached
		"38 30 0:47 / /home/u/shared/c\\040d rw - tmpfs tmpfs rw\n" + // covered by 36 too
		"39 30 0:48 / /home/u/data rw - tmpfs tmpfs rw\n" +
		"40 39 0:49 / /home/u/data/x rw - tmpfs tmpfs rw\n" +
		"41 40 0:50 / /home/u/data/x rw - tmpfs tmpfs rw\n")) // stacked on 40: 41 is what x shows
	ids := func(es []mountinfo.Entry) []int {
		var out []int
		for _, e := range es {
			out = append(out, e.ID)
		}
		return out
	}
	for _, c := range []struct {
		name string
		dirs []string
		want []int
	}{
		{"none", nil, nil},
		{"the project", []string{"/home/u/proj"}, nil}, // 31 and 32 lie under 33, mounted later on the project
		{"a bind", []string{"/home/u/shared"}, []int{37}},
		{"stacked", []string{"/home/u/data"}, []int{41}},
		{"the root", []string{"/"}, []int{21, 30, 33, 34, 36, 37, 39, 41}},
		{"several", []string{"/home/u/data", "/home/u/shared", "/home/u/data/x"}, []int{37, 41}},
	} {
		if got := ids(Below(table, c.dirs)); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: Below(%v) = %v, want %v", c.name, c.dirs, got, c.want)
		}
	}
	// Without the cover at the project, both tmpfs below it are reached.
	var uncovered []mountinfo.Entry
	for _, e := range table {
		if e.ID != 33 {
			uncovered = append(uncovered, e)
		}
	}
	if got := ids(Below(uncovered, []string{"/home/u/proj"})); !reflect.DeepEqual(got, []int{31, 32}) {
		t.Errorf("below the project: got %v, want [31 32]", got)
	}
	// A table without a root reaches nothing; a loop of parents ends.
	loop := mountinfo.Parse([]byte("5 6 0:1 / /a rw - tmpfs t rw\n6 5 0:2 / /a/b rw - tmpfs t rw\n"))
	if got := Below(loop, []string{"/a"}); got != nil {
		t.Errorf("a table without a root: got %v", got)
	}
}

// TestBelowIn: the text's quick look finds what the parse finds, a path with a
// space (escaped in the table) included, and spares the parse without a mount below.
func TestBelowIn(t *testing.T) {
	text := []byte("20 1 8:1 / / rw - ext4 /dev/sda1 rw\n" +
		"31 20 0:40 / /home/u/my\\040proj/sub rw - tmpfs tmpfs rw\n" +
		"32 20 0:41 / /home/u/back\\134slash/x rw - tmpfs tmpfs rw\n" +
		"33 20 0:42 / /home/u/projx rw - tmpfs tmpfs rw\n" +
		// Whitespace the kernel does not escape (a no-break space, a carriage
		// return, a vertical tab) is part of the path, not a separator.
		"34 20 0:43 / /home/u/no\u00a0break/sub rw - tmpfs tmpfs rw\n" +
		"35 20 0:44 / /home/u/cr\rvt\v/sub rw - tmpfs tmpfs rw\n")
	for _, c := range []struct {
		dirs []string
		want []int
	}{
		{[]string{"/home/u/my proj"}, []int{31}},
		{[]string{`/home/u/back\slash`}, []int{32}},
		{[]string{"/home/u/proj"}, nil},
		{[]string{"/home/u/my"}, nil},
		{[]string{"/home/u/no\u00a0break"}, []int{34}},
		{[]string{"/home/u/cr\rvt\v"}, []int{35}},
		{[]string{"/home/u/no"}, nil},
		{[]string{"/"}, []int{31, 32, 33, 34, 35}},
	} {
		var got []int
		for _, e := range belowIn(text, c.dirs) {
			got = append(got, e.ID)
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("belowIn(%q) = %v, want %v", c.dirs, got, c.want)
		}
	}
}

// TestForWatchesSubmounts: For's Guard watches a file system mounted below the
// project (a tmpfs), through the mount it opened, and the reserve is kept there.
func TestForWatchesSubmounts(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to mount a tmpfs")
	}
	proj := t.TempDir()
	sub := filepath.Join(proj, "a", "sub")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", sub, "tmpfs", 0, "size=4m"); err != nil {
		t.Skipf("cannot mount a tmpfs here: %v", err)
	}
	defer unix.Unmount(sub, unix.MNT_DETACH)
	p := &isolator.Plan{}
	p.Project.Dir = proj
	p.Limits.DiskReserve = 8 << 20 // more than the tmpfs holds
	g, release, err := For(p)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	if !slices.Contains(g.Paths, sub) {
		t.Fatalf("Paths = %v; want %s among them", g.Paths, sub)
	}
	if w := Watched(p); !slices.Contains(w, sub) {
		t.Errorf("Watched = %v; want %s among them", w, sub)
	}
	var low *LowError
	if err := g.Check(); !errors.As(err, &low) || low.Path != sub {
		t.Errorf("Check = %v; want the tmpfs at %s under the reserve", err, sub)
	}
	// What is opened is checked to be the mount the table names.
	b, err := os.ReadFile(mountTable)
	if err != nil {
		t.Fatal(err)
	}
	found := belowIn(b, []string{proj})
	if len(found) != 1 || found[0].Point != sub {
		t.Fatalf("belowIn = %+v; want the tmpfs at %s", found, sub)
	}
	fd, err := openPin(sub)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	other := found[0]
	other.ID, other.Dev = other.ID+100000, "0:0"
	if !isMount(fd, found[0]) || isMount(fd, other) {
		t.Errorf("isMount: want true for %+v, false for %+v", found[0], other)
	}
	// Through a link to the project, the same mount is found.
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(proj, link); err != nil {
		t.Fatal(err)
	}
	p.Project.Dir = link
	g2, release2, err := For(p)
	if err != nil {
		t.Fatal(err)
	}
	defer release2()
	if !slices.Contains(g2.Paths, sub) {
		t.Errorf("through a link: Paths = %v; want %s among them", g2.Paths, sub)
	}
}

// TestMayHold: the quick look at the text never says no where the parse finds a
// mount below a directory (the skip must not lose one), looks at the mount point
// only, and escapes as the kernel does.
func TestMayHold(t *testing.T) {
	text := []byte("20 1 8:1 / / rw - ext4 /dev/sda1 rw\n" +
		"31 20 0:40 /home/u/proj/x /mnt rw - tmpfs /home/u/proj/y rw\n" + // the project named as a root and a source only
		"32 20 0:41 / /home/u/a\\040b\\011c\\012d\\134e/sub rw - tmpfs tmpfs rw\n" +
		"33 20 0:42 / /home/u/projx rw - tmpfs tmpfs rw\n" +
		"34 20 0:43 / /home/u/no\u00a0break/sub rw - tmpfs tmpfs rw\n" +
		"short line\n")
	for _, c := range []struct {
		dirs []string
		want bool
	}{
		{[]string{"/home/u/proj"}, false},
		{[]string{"/home/u/a b\tc\nd\\e"}, true},
		{[]string{"/home/u/a b"}, false},
		{[]string{"/home/u/no\u00a0break"}, true},
		{[]string{"/home/u/no"}, false},
		{[]string{"/home/u/proj", "/home"}, true},
		{[]string{"/"}, true},
		{nil, false},
	} {
		if got := mayHold(text, c.dirs); got != c.want {
			t.Errorf("mayHold(%q) = %v, want %v", c.dirs, got, c.want)
		}
		if found := len(Below(mountinfo.Parse(text), c.dirs)) > 0; found && !mayHold(text, c.dirs) {
			t.Errorf("mayHold(%q) = false, but Below finds a mount below", c.dirs)
		}
	}
	for _, p := range []string{"/plain", "/a b", "/t\tn\nb\\", "/ünï\u00a0"} {
		if got := mountinfo.Unescape(string(escape(p))); got != p {
			t.Errorf("Unescape(escape(%q)) = %q", p, got)
		}
	}
}

// TestReadTable: the one-buffer read returns the whole file, one larger than its
// first buffer included, and an error naming the path when it cannot be opened.
func TestReadTable(t *testing.T) {
	f := filepath.Join(t.TempDir(), "table")
	want := []byte(strings.Repeat("20 1 8:1 / / rw - ext4 /dev/sda1 rw\n", 1500)) // 54 KB
	if err := os.WriteFile(f, want, 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := readTable(f); err != nil || !bytes.Equal(got, want) {
		t.Errorf("readTable: %d bytes, %v; want %d bytes", len(got), err, len(want))
	}
	// The host's table (other mounts may come and go meanwhile): read whole, its
	// root mount included.
	got, err := readTable(mountTable)
	if err != nil || !slices.ContainsFunc(mountinfo.Parse(got), func(e mountinfo.Entry) bool { return e.Point == "/" }) {
		t.Errorf("readTable(%s): %v, no root mount in %q", mountTable, err, got)
	}
	if _, err := readTable(f + ".missing"); !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), f+".missing") {
		t.Errorf("readTable of a missing file: %v", err)
	}
}
