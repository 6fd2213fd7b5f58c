package dirfile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The file at name is replaced in one step (a rename over it): at no moment is there
// no file at name, which a reader (a run reading the records, git reading a file the
// watch put back) would take for none. Told by inotify: name is never deleted, only
// moved onto.
func TestReplaceAtAtomic(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "f"), []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	in, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(in)
	if _, err := unix.InotifyAddWatch(in, dir, unix.IN_DELETE|unix.IN_MOVED_TO); err != nil {
		t.Fatal(err)
	}
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if err := ReplaceAt(fd, "f", []byte("new"), 0o600); err != nil {
		t.Fatal(err)
	}
	// The events are queued by the time ReplaceAt's calls return.
	buf := make([]byte, 64*1024)
	n, err := unix.Read(in, buf)
	if err != nil {
		t.Fatalf("reading the directory's events: %v", err)
	}
	movedTo := false
	for off := 0; off+unix.SizeofInotifyEvent <= n; {
		ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
		name := strings.TrimRight(string(buf[off+unix.SizeofInotifyEvent:off+unix.SizeofInotifyEvent+int(ev.Len)]), "\x00")
		off += unix.SizeofInotifyEvent + int(ev.Len)
		if name != "f" {
			continue
		}
		if ev.Mask&unix.IN_DELETE != 0 {
			t.Errorf("f was deleted before the new file took its place: a reader could find no file there")
		}
		if ev.Mask&unix.IN_MOVED_TO != 0 {
			movedTo = true
		}
	}
	if !movedTo {
		t.Error("no file was renamed onto f")
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "f")); string(b) != "new" {
		t.Errorf("f holds %q, want the new content", b)
	}
}
