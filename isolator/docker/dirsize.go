package docker

import (
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// The bounds of one dirSize walk. A sandbox writes its home and its session /tmp
// (in the state directory), so it can plant millions of entries or a deep tree in what
// `sandboxes list`, `rm` and `prune` measure: past a bound the walk stops, and the
// size it found is a lower bound.
const (
	walkEntries = 100_000
	walkDepth   = 64
	walkTime    = 2 * time.Second
)

// sizeOf is the result of a dirSize walk: the bytes of the regular files it saw, and
// why it stopped early ("" when it saw every entry).
type sizeOf struct {
	bytes   int64
	stopped string
}

// dirSize adds up the sizes of the regular files under root, within the walk's
// bounds. It follows no symbolic link, root included: each directory is opened from
// its parent's descriptor with O_NOFOLLOW, so one swapped for a link meanwhile is
// not entered. What it cannot read is left out.
func dirSize(root string) sizeOf { return dirSizeWithin(root, walkEntries, walkDepth, walkTime) }

// dirSizeWithin is dirSize with the bounds given.
func dirSizeWithin(root string, entries, depth int, limit time.Duration) sizeOf {
	w := &sizeWalk{maxEntries: entries, maxDepth: depth, limit: limit, deadline: time.Now().Add(limit)}
	fd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return sizeOf{}
	}
	w.dir(fd, root, 1)
	return w.sizeOf
}

type sizeWalk struct {
	sizeOf
	entries              int
	maxEntries, maxDepth int
	limit                time.Duration
	deadline             time.Time
}

// dir walks the directory open as fd (its path is name, for os.NewFile), at depth,
// and closes fd. It returns false once a bound stops the walk.
func (w *sizeWalk) dir(fd int, name string, depth int) bool {
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	for {
		ents, err := f.ReadDir(256)
		for _, e := range ents {
			w.entries++
			if w.entries > w.maxEntries {
				w.stopped = fmt.Sprintf("stopped after %d entries", w.maxEntries)
				return false
			}
			if w.entries%1024 == 0 && time.Now().After(w.deadline) {
				w.stopped = fmt.Sprintf("stopped after %v", w.limit)
				return false
			}
			switch t := e.Type(); {
			case t.IsRegular():
				var st unix.Stat_t
				if unix.Fstatat(fd, e.Name(), &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFREG {
					w.bytes += st.Size
				}
			case t.IsDir():
				if depth >= w.maxDepth {
					if w.stopped == "" {
						w.stopped = fmt.Sprintf("stopped at depth %d", w.maxDepth)
					}
					continue
				}
				cfd, err := unix.Openat(fd, e.Name(), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
				if err != nil {
					continue
				}
				if !w.dir(cfd, name+"/"+e.Name(), depth+1) {
					return false
				}
			}
		}
		if err != nil { // the end, or what cannot be read: left out
			return true
		}
	}
}
