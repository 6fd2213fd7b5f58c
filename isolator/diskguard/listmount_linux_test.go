package diskguard

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"golang.org/x/sys/unix"
)

// TestNoneBelowAsks: noneBelow says yes only when the kernel answered, for each
// mount holding a directory, that none lies below it; any error (a kernel without
// listmount, a filter refusing it) or any mount below sends the caller to the table.
func TestNoneBelowAsks(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var fds []int
	for _, p := range []string{dir, dir, file} {
		fd, err := openPin(p)
		if err != nil {
			t.Fatal(err)
		}
		defer unix.Close(fd)
		fds = append(fds, fd)
	}
	var st unix.Statx_t
	if err := unix.Statx(fds[0], "", unix.AT_EMPTY_PATH, unix.STATX_MNT_ID_UNIQUE, &st); err != nil || st.Mask&unix.STATX_MNT_ID_UNIQUE == 0 {
		if !noneBelow(fds, func(uint64, []uint64) (int, error) { return 0, nil }) {
			return // a kernel before 6.8: no unique mount ID, so never a yes
		}
		t.Fatal("noneBelow said yes without a unique mount ID")
	}
	var asked []uint64
	for _, c := range []struct {
		name string
		list listMounts
		want bool
	}{
		{"none below", func(id uint64, _ []uint64) (int, error) { asked = append(asked, id); return 0, nil }, true},
		{"one below", func(uint64, []uint64) (int, error) { return 1, nil }, false},
		{"no system call", func(uint64, []uint64) (int, error) { return 0, unix.ENOSYS }, false},
		{"refused", func(uint64, []uint64) (int, error) { return 0, unix.EPERM }, false},
	} {
		if got := noneBelow(fds, c.list); got != c.want {
			t.Errorf("%s: noneBelow = %v, want %v", c.name, got, c.want)
		}
	}
	// The directory's mount asked once (the file is not asked: nothing lies below one).
	if !slices.Equal(asked, []uint64{st.Mnt_id}) {
		t.Errorf("asked about %v; want the directory's mount %d once", asked, st.Mnt_id)
	}
}

// TestForWithListmount: on the kernel's answer, a project on a file system of its
// own with nothing below it reads no table, one with a tmpfs below it still finds
// and watches it, and so does one whose kernel cannot answer (the table read).
func TestForWithListmount(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to mount a tmpfs")
	}
	root := t.TempDir()
	if err := unix.Mount("tmpfs", root, "tmpfs", 0, "size=4m"); err != nil {
		t.Skipf("cannot mount a tmpfs here: %v", err)
	}
	defer unix.Unmount(root, unix.MNT_DETACH)
	proj := filepath.Join(root, "proj")
	sub := filepath.Join(proj, "a", "sub")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := listmount(1, make([]uint64, 1))
	hasList := !errors.Is(err, unix.ENOSYS)
	answered := func() bool {
		fd, err := openPin(proj)
		if err != nil {
			t.Fatal(err)
		}
		defer unix.Close(fd)
		return noneBelow([]int{fd}, listmount)
	}
	find := func(list listMounts) []string {
		t.Helper()
		pins, err := pinPaths([]string{proj})
		if err != nil {
			t.Fatal(err)
		}
		defer closeAll(pins)
		points, err := pinSubmountsWith(pins, []string{proj}, list)
		if err != nil {
			t.Fatal(err)
		}
		return points
	}
	if got := find(listmount); got != nil {
		t.Errorf("nothing mounted below: found %v", got)
	}
	if hasList && !answered() {
		t.Error("nothing mounted below the project's tmpfs, and noneBelow did not say so")
	}
	if err := unix.Mount("tmpfs", sub, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatal(err)
	}
	defer unix.Unmount(sub, unix.MNT_DETACH)
	if answered() {
		t.Error("a tmpfs below the project, and noneBelow said none")
	}
	noSyscall := func(uint64, []uint64) (int, error) { return 0, unix.ENOSYS }
	for name, list := range map[string]listMounts{"listmount": listmount, "without listmount": noSyscall} {
		if got := find(list); !slices.Equal(got, []string{sub}) {
			t.Errorf("%s: found %v; want the tmpfs at %s", name, got, sub)
		}
	}
}
