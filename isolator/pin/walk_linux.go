package pin

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/devsandbox/devsandbox/isolator"
)

// walker opens paths component by component. It keeps the directories it crossed
// open (O_PATH), so the many sources below one project share the walk to it.
type walker struct {
	untrusted *roots
	dirs      map[string]int // real path of a directory crossed -> its O_PATH descriptor
}

func newWalker(untrusted *roots) *walker {
	return &walker{untrusted: untrusted, dirs: map[string]int{}}
}

func (w *walker) close() {
	for _, fd := range w.dirs {
		unix.Close(fd)
	}
}

const pathFlags = unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC

// nearest returns the longest ancestor of p (or p) the walker holds open, "/" at least.
func (w *walker) nearest(p string) (string, int, error) {
	for d := p; ; d = filepath.Dir(d) {
		if fd, ok := w.dirs[d]; ok {
			return d, fd, nil
		}
		if d == "/" {
			fd, err := unix.Open("/", pathFlags|unix.O_DIRECTORY, 0)
			if err != nil {
				return "", -1, fmt.Errorf("opening /: %w", err)
			}
			w.dirs["/"] = fd
			return "/", fd, nil
		}
	}
}

// open pins p.
func (w *walker) open(p string) (*Source, error) {
	if !filepath.IsAbs(p) {
		return nil, fmt.Errorf("%s is not an absolute path", p)
	}
	p = filepath.Clean(p)
	for links := 0; ; links++ {
		if links > maxLinks {
			return nil, fmt.Errorf("%s: %w", p, unix.ELOOP)
		}
		next, src, err := w.walk(p)
		if src != nil {
			src.path = p
		}
		if err != nil || src != nil {
			return src, err
		}
		p = next // a trusted symlink on the way: walk its target
	}
}

// walk opens p from its nearest open ancestor. It returns the pinned source, or the
// path to walk instead when it met a symlink it may follow.
func (w *walker) walk(p string) (string, *Source, error) {
	cur, fd, err := w.nearest(p)
	if err != nil {
		return "", nil, err
	}
	var rest []string
	if p != cur {
		rest = strings.Split(strings.TrimPrefix(p[len(cur):], "/"), "/")
	}
	if len(rest) == 0 {
		// p is a directory held open: pin a descriptor of its own.
		nfd, err := unix.Openat(fd, ".", pathFlags|unix.O_DIRECTORY, 0)
		if err != nil {
			return "", nil, fmt.Errorf("%s: %w", p, err)
		}
		var st unix.Stat_t
		if err := unix.Fstat(nfd, &st); err != nil {
			unix.Close(nfd)
			return "", nil, fmt.Errorf("%s: %w", p, err)
		}
		return "", source(nfd, p, &st), nil
	}
	for i, c := range rest {
		nfd, err := unix.Openat(fd, c, pathFlags, 0)
		if err != nil {
			return "", nil, fmt.Errorf("%s: %w", filepath.Join(cur, c), err)
		}
		var st unix.Stat_t
		if err := unix.Fstat(nfd, &st); err != nil {
			unix.Close(nfd)
			return "", nil, fmt.Errorf("%s: %w", filepath.Join(cur, c), err)
		}
		at := filepath.Join(cur, c)
		switch {
		case st.Mode&unix.S_IFMT == unix.S_IFLNK:
			target, err := readlink(nfd)
			unix.Close(nfd)
			if err != nil {
				return "", nil, fmt.Errorf("%s: %w", at, err)
			}
			if within(cur, w.untrusted.get()) {
				return "", nil, fmt.Errorf("%w: %s is a symlink (to %s) in a directory the sandbox can write; remove the link (a sandboxed program may have planted it)", ErrUntrustedLink, at, target)
			}
			if !filepath.IsAbs(target) {
				target = filepath.Join(cur, target)
			}
			return filepath.Join(append([]string{target}, rest[i+1:]...)...), nil, nil
		case i == len(rest)-1:
			return "", source(nfd, at, &st), nil
		case st.Mode&unix.S_IFMT != unix.S_IFDIR:
			unix.Close(nfd)
			return "", nil, fmt.Errorf("%s: %w", at, unix.ENOTDIR)
		}
		w.dirs[at] = nfd
		cur, fd = at, nfd
	}
	return "", nil, fmt.Errorf("%s: %w", p, unix.EINVAL) // not reached
}

// source is the pinned source of the descriptor fd of p, whose fstat is st.
func source(fd int, p string, st *unix.Stat_t) *Source {
	return &Source{
		File: os.NewFile(uintptr(fd), p),
		ID:   isolator.FileID{Dev: uint64(st.Dev), Ino: st.Ino},
		Dir:  st.Mode&unix.S_IFMT == unix.S_IFDIR,
	}
}

// readlink reads the symlink open as the O_PATH descriptor fd.
func readlink(fd int) (string, error) {
	buf := make([]byte, unix.PathMax)
	n, err := unix.Readlinkat(fd, "", buf)
	if err != nil {
		return "", err
	}
	return string(buf[:n]), nil
}
