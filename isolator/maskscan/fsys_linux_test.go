package maskscan

import (
	"os"
	"path"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// fsys changes a tree the way a user does, and makes sure each change shows in the
// stamp of the directories it touched. On kernels whose directory timestamps are
// coarse, a change right after a scan can keep the stamp that scan saw; the racy
// check covers that, but these tests trust every directory (see later) to exercise
// the reuse of the cache, so they move the mtime on instead.
type fsys struct {
	t    *testing.T
	root string
	tick int64
}

func (f *fsys) do(op func() error, dirs ...string) {
	f.t.Helper()
	before := make([]stamp, len(dirs))
	for i, d := range dirs {
		before[i] = lstamp(f.t, filepath.Join(f.root, d))
	}
	if err := op(); err != nil {
		f.t.Fatal(err)
	}
	for i, d := range dirs {
		p := filepath.Join(f.root, d)
		if lstamp(f.t, p) == before[i] {
			f.tick++
			if err := os.Chtimes(p, time.Time{}, time.Unix(1e9+f.tick, 0)); err != nil {
				f.t.Fatal(err)
			}
		}
	}
}

func (f *fsys) abs(p string) string { return filepath.Join(f.root, p) }

func (f *fsys) write(p string) {
	f.do(func() error { return os.WriteFile(f.abs(p), nil, 0o644) }, path.Dir(p))
}

func (f *fsys) mkdir(p string) {
	f.do(func() error { return os.Mkdir(f.abs(p), 0o755) }, path.Dir(p))
}

func (f *fsys) remove(p string) {
	f.do(func() error { return os.RemoveAll(f.abs(p)) }, path.Dir(p))
}

func (f *fsys) rename(from, to string) {
	f.do(func() error { return os.Rename(f.abs(from), f.abs(to)) }, path.Dir(from), path.Dir(to))
}

func (f *fsys) symlink(target, p string) {
	f.do(func() error { return os.Symlink(target, f.abs(p)) }, path.Dir(p))
}

func lstamp(t *testing.T, p string) stamp {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Lstat(p, &st); err != nil {
		t.Fatal(err)
	}
	return stamp{dev: uint64(st.Dev), ino: st.Ino, mtime: st.Mtim.Nano(), ctime: st.Ctim.Nano()}
}
