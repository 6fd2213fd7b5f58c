package dirfile

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// swapper is a hostile process's side of the race, in a goroutine: told by inotify of
// every name made in dir, it renames a symlink to a file of its own over it (the
// moment between a file's creation and its rename into place), and looks at name
// after each event for its link.
type swapper struct {
	swaps, planted atomic.Int64
	stop           chan struct{}
	done           chan struct{}
}

func startSwapper(t *testing.T, dir, name, target string) *swapper {
	t.Helper()
	in, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		t.Skipf("inotify: %v", err)
	}
	if _, err := unix.InotifyAddWatch(in, dir, unix.IN_CREATE|unix.IN_MOVED_TO); err != nil {
		t.Fatal(err)
	}
	dfd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	s := &swapper{stop: make(chan struct{}), done: make(chan struct{})}
	ours := map[string]bool{}
	n := 0
	link := func() string {
		n++
		l := fmt.Sprintf("link-%d", n)
		ours[l] = true
		if err := unix.Symlinkat(target, dfd, l); err != nil {
			panic(err)
		}
		return l
	}
	ready := link()
	go func() {
		defer close(s.done)
		defer unix.Close(in)
		defer unix.Close(dfd)
		buf := make([]byte, 64<<10)
		for {
			select {
			case <-s.stop:
				return
			default:
			}
			fds := []unix.PollFd{{Fd: int32(in), Events: unix.POLLIN}}
			if k, _ := unix.Poll(fds, 10); k <= 0 {
				continue
			}
			m, err := unix.Read(in, buf)
			if err != nil {
				continue
			}
			for off := 0; off+unix.SizeofInotifyEvent <= m; {
				ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
				ent := strings.TrimRight(string(buf[off+unix.SizeofInotifyEvent:off+unix.SizeofInotifyEvent+int(ev.Len)]), "\x00")
				off += unix.SizeofInotifyEvent + int(ev.Len)
				switch {
				case ent == name:
					if got, err := os.Readlink(filepath.Join(dir, name)); err == nil && got == target {
						s.planted.Add(1)
					}
				case ours[ent] || strings.HasPrefix(ent, "old-"):
				case ev.Mask&unix.IN_CREATE != 0:
					if unix.Renameat(dfd, ready, dfd, ent) == nil {
						s.swaps.Add(1)
						ours[ent] = true
						ready = link()
					}
				}
			}
		}
	}()
	return s
}

func (s *swapper) end() {
	close(s.stop)
	<-s.done
}

// A process swapping every name made in the directory for its link never gets that
// link (or anything else of its own) linked at the name: with O_TMPFILE (no name to
// swap) and with the random name of file systems without it, which it does swap.
func TestLinkAtSwapped(t *testing.T) {
	for _, unnamed := range []bool{true, false} {
		t.Run(fmt.Sprintf("unnamed=%v", unnamed), func(t *testing.T) {
			dir := t.TempDir()
			target := filepath.Join(t.TempDir(), "planted")
			if err := os.WriteFile(target, []byte("[core]\n\tfsmonitor = x\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer unix.Close(fd)
			s := startSwapper(t, dir, "f", target)
			// Long enough to write that the swapper, woken at the file's creation,
			// renames its link over the random name before the file is in place.
			content := bytes.Repeat([]byte("# host\n"), 64<<10)
			refused := 0
			for i := range 100 {
				if err := unix.Renameat(fd, "f", fd, fmt.Sprintf("old-%d", i)); err != nil && !errors.Is(err, unix.ENOENT) {
					t.Fatal(err)
				}
				err := linkAt(fd, "f", content, 0o644, unnamed, "/proc/self/fd/")
				if !unnamed && errors.Is(err, ErrSwapped) {
					refused++
					if _, err := os.Lstat(filepath.Join(dir, "f")); !errors.Is(err, fs.ErrNotExist) {
						t.Fatalf("round %d: ErrSwapped, and f is there (%v)", i, err)
					}
					continue
				}
				if err != nil {
					t.Fatalf("round %d: %v", i, err)
				}
				fi, err := os.Lstat(filepath.Join(dir, "f"))
				if err != nil || !fi.Mode().IsRegular() {
					t.Fatalf("round %d: f is %v, %v; want a regular file", i, fi, err)
				}
				if b, _ := os.ReadFile(filepath.Join(dir, "f")); !bytes.Equal(b, content) {
					t.Fatalf("round %d: f holds %d bytes, not what was written", i, len(b))
				}
			}
			s.end()
			if n := s.planted.Load(); n > 0 {
				t.Errorf("the swapper's link was at f %d times", n)
			}
			if n := s.swaps.Load(); !unnamed && n == 0 {
				t.Errorf("the swapper swapped no random name: the test proves nothing for file systems without O_TMPFILE")
			}
			t.Logf("swaps %d, refused %d", s.swaps.Load(), refused)
		})
	}
}

// A name taken (here by a link to a host file) is left as it is: fs.ErrExist, the
// link's target unwritten, nothing else left in the directory.
func TestLinkAtExists(t *testing.T) {
	for _, unnamed := range []bool{true, false} {
		dir := t.TempDir()
		victim := filepath.Join(t.TempDir(), "victim")
		if err := os.WriteFile(victim, []byte("host"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(victim, filepath.Join(dir, "f")); err != nil {
			t.Fatal(err)
		}
		fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		err = linkAt(fd, "f", []byte("new"), 0o644, unnamed, "/proc/self/fd/")
		unix.Close(fd)
		if !errors.Is(err, fs.ErrExist) {
			t.Errorf("unnamed=%v: LinkAt over a link = %v, want fs.ErrExist", unnamed, err)
		}
		if b, _ := os.ReadFile(victim); string(b) != "host" {
			t.Errorf("unnamed=%v: the link's target was written: %q", unnamed, b)
		}
		if l, err := os.Readlink(filepath.Join(dir, "f")); err != nil || l != victim {
			t.Errorf("unnamed=%v: f is no longer the link (%q, %v)", unnamed, l, err)
		}
		if ents, _ := os.ReadDir(dir); len(ents) != 1 {
			t.Errorf("unnamed=%v: the directory holds %d entries, want f alone", unnamed, len(ents))
		}
	}
}

// Without /proc the file cannot be linked by its descriptor: an error naming /proc,
// nothing at the name, nothing left beside it.
func TestLinkAtNoProc(t *testing.T) {
	for _, unnamed := range []bool{true, false} {
		dir := t.TempDir()
		fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		err = linkAt(fd, "f", []byte("new"), 0o644, unnamed, filepath.Join(t.TempDir(), "proc")+"/")
		unix.Close(fd)
		if err == nil || !strings.Contains(err.Error(), "/proc") {
			t.Errorf("unnamed=%v: LinkAt without /proc = %v, want an error naming /proc", unnamed, err)
		}
		if ents, _ := os.ReadDir(dir); len(ents) != 0 {
			t.Errorf("unnamed=%v: the directory holds %d entries, want none", unnamed, len(ents))
		}
	}
}

// LinkAt makes a regular file of the content and mode (less the umask).
func TestLinkAtWrites(t *testing.T) {
	dir := t.TempDir()
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if err := LinkAt(fd, "f", []byte("content"), 0o600); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Lstat(filepath.Join(dir, "f"))
	if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o600 {
		t.Errorf("f is %v, %v; want a regular 0600 file", fi, err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "f")); string(b) != "content" {
		t.Errorf("f holds %q", b)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("the directory holds %d entries, want f alone", len(ents))
	}
}
