package tmpdir

import (
	"os"
	"path/filepath"
	"sync"

	"golang.org/x/sys/unix"
)

// Watch recreates the session dir when it is removed on the host while the session
// runs (a cleanup script, `rm -rf ~/.local/state`), so the session keeps a locked dir
// that later sessions do not mistake for an orphan, and calls lost once for the first
// such event. It costs one inotify descriptor and no polling. Stop ends it.
func (s *Session) Watch(lost func()) (stop func(), err error) {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil, err
	}
	base := filepath.Dir(s.Path)
	if _, err := unix.InotifyAddWatch(fd, base, unix.IN_DELETE|unix.IN_MOVED_FROM|unix.IN_DELETE_SELF|unix.IN_MOVE_SELF|unix.IN_ONLYDIR); err != nil {
		unix.Close(fd)
		return nil, err
	}
	f := os.NewFile(uintptr(fd), "inotify") // non-blocking: Close interrupts a pending Read
	// stop does not wait for the goroutine (it may not be scheduled for a while on a
	// busy machine); the mutex orders them instead: once stop returns, the goroutine
	// recreates nothing, so Release can remove the dir for good.
	var mu sync.Mutex
	stopped := false
	var once sync.Once
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := f.Read(buf)
			if err != nil {
				return
			}
			if !s.affected(buf[:n]) {
				continue
			}
			mu.Lock()
			if stopped {
				mu.Unlock()
				return
			}
			if os.MkdirAll(base, 0o700) == nil && s.Recreate() == nil {
				// Watch the new base too, in case it was the base that went.
				_, _ = unix.InotifyAddWatch(fd, base, unix.IN_DELETE|unix.IN_MOVED_FROM|unix.IN_DELETE_SELF|unix.IN_MOVE_SELF|unix.IN_ONLYDIR)
			}
			mu.Unlock()
			once.Do(lost)
		}
	}()
	return func() {
		mu.Lock()
		stopped = true
		mu.Unlock()
		// Close waits for the reader goroutine to let go of the descriptor, which a
		// busy scheduler can delay by many milliseconds: let it happen in the background.
		go f.Close()
	}, nil
}

// affected reports whether a batch of inotify events concerns the session dir.
func (s *Session) affected(b []byte) bool {
	for len(b) >= unix.SizeofInotifyEvent {
		ev := (*unix.InotifyEvent)(unsafePointer(b))
		nameLen := int(ev.Len)
		name := ""
		if nameLen > 0 && len(b) >= unix.SizeofInotifyEvent+nameLen {
			raw := b[unix.SizeofInotifyEvent : unix.SizeofInotifyEvent+nameLen]
			for i, c := range raw {
				if c == 0 {
					raw = raw[:i]
					break
				}
			}
			name = string(raw)
		}
		if ev.Mask&(unix.IN_DELETE_SELF|unix.IN_MOVE_SELF) != 0 || name == s.Name {
			return true
		}
		b = b[unix.SizeofInotifyEvent+nameLen:]
	}
	return false
}
