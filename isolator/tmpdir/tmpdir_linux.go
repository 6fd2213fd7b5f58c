// Package tmpdir manages per-session /tmp directories on the host. A session dir is a
// random directory under a base directory, held by an flock for the life of the run and
// removed at its end. Dirs of sessions that died without cleaning up (kill -9) are
// removed by a later session once they are older than MaxAge and their lock is free.
package tmpdir

import (
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"

	"github.com/devsandbox/devsandbox/internal/dirent"
	"github.com/devsandbox/devsandbox/internal/rmtree"
	"github.com/devsandbox/devsandbox/internal/sysrandom"
)

// MaxAge is how old an unlocked session dir must be before it counts as an orphan.
const MaxAge = 48 * time.Hour

// Session is one acquired session dir.
type Session struct {
	Name string // base name, below the base dir
	Path string
	fd   int
	// removed: the name is gone (Remove, RemoveEmpty); not safe for concurrent use.
	removed bool
}

// Acquire creates and locks a new session dir under base (created 0700 if missing).
func Acquire(base string) (*Session, error) {
	// The base may be in a shared place (/dev/shm): it must be ours and private, or
	// another user could swap session dirs under us. It is created only when missing
	// (one lstat on most launches, where os.MkdirAll made a stat of its own first).
	var st unix.Stat_t
	err := unix.Lstat(base, &st)
	if err == unix.ENOENT {
		if err := os.MkdirAll(base, 0o700); err != nil {
			return nil, fmt.Errorf("creating the session directory base %s: %w", base, err)
		}
		err = unix.Lstat(base, &st)
	}
	if err != nil {
		return nil, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR || int(st.Uid) != os.Geteuid() || st.Mode&0o022 != 0 {
		return nil, fmt.Errorf("%s is not a private directory of yours (owner %d, mode %o); remove it", base, st.Uid, st.Mode&0o7777)
	}
	rnd, err := random8()
	if err != nil {
		return nil, err
	}
	name := hex.EncodeToString(rnd[:])
	p := filepath.Join(base, name)
	if err := os.Mkdir(p, 0o700); err != nil {
		return nil, fmt.Errorf("creating the session /tmp %s: %w", p, err)
	}
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("opening the session /tmp %s: %w", p, err)
	}
	if err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("locking the session /tmp %s: %w", p, err)
	}
	return &Session{Name: name, Path: p, fd: fd}, nil
}

// random8 reads 8 bytes from getrandom(2) itself (package sysrandom).
func random8() ([8]byte, error) {
	var b [8]byte
	return b, sysrandom.Read(b[:])
}

// Lost reports whether the session dir is no longer the one that was locked (removed
// or replaced on the host while the session ran).
func (s *Session) Lost() bool {
	var held, now unix.Stat_t
	if unix.Fstat(s.fd, &held) != nil || unix.Lstat(s.Path, &now) != nil {
		return true
	}
	return held.Ino != now.Ino || held.Dev != now.Dev
}

// Release removes the session dir and drops its lock: Remove, then Close.
func (s *Session) Release() error {
	err := s.Remove()
	s.Close()
	return err
}

// Remove removes the session dir's name; the directory itself is freed when Close
// drops the last reference to it (on ext4 that frees its block, which on a file
// system mounted with discard and without a journal waits for the disk's discard:
// 0.2-0.3 ms measured here, most of a removal). For an empty session dir Remove is
// quick and Close is the wait, so a caller can start other work between the two.
//
// An empty session dir, the usual case, goes with one rmdir(2) (RemoveEmpty):
// rmtree.RemoveAll's first step is an unlink(2) of the path, which fails with EISDIR
// for every session dir. rmdir removes only an empty directory and never follows a
// symlink in the last component (ENOTDIR), so whatever else the path names now
// (files, a symlink, a directory the host put there, a mount point) goes to
// rmtree.RemoveAll, which walks and removes without following symlinks, however
// deep the sandbox nested it.
func (s *Session) Remove() error {
	if s.RemoveEmpty() {
		return nil
	}
	err := rmtree.RemoveAll(s.Path)
	s.removed = err == nil
	return err
}

// RemoveEmpty removes the session dir when it is empty, with one rmdir(2), and
// reports whether its name is gone; when it is not, only Remove removes it. Its cost
// does not grow with what the sandbox left in /tmp.
func (s *Session) RemoveEmpty() bool {
	if !s.removed {
		err := unix.Rmdir(s.Path)
		s.removed = err == nil || errors.Is(err, unix.ENOENT)
	}
	return s.removed
}

// Close drops the session dir's lock and its descriptor.
func (s *Session) Close() { unix.Close(s.fd) }

// CleanOrphans removes session dirs under base that are older than maxAge and whose
// lock is free. Symlinks and non-directories are never followed or removed; the inode
// is re-checked after locking so a dir swapped in meanwhile is left alone. It returns
// the number of dirs removed; errors on single entries are skipped.
func CleanOrphans(base string, now time.Time, maxAge time.Duration) int {
	// Listed with getdents64 directly (package dirent): the base is empty or nearly so
	// on most launches, and os.ReadDir's poller registration and sort were most of the
	// cost of finding that out.
	var names []string
	if dirent.ReadDir(base, 1024, func(name string, typ byte) bool {
		// A symlink (DT_LNK) is never a session dir; DT_UNKNOWN is decided by the lstat below.
		if typ == unix.DT_DIR || typ == unix.DT_UNKNOWN {
			names = append(names, name)
		}
		return true
	}) != nil {
		return 0
	}
	removed := 0
	for _, name := range names {
		p := filepath.Join(base, name)
		var st unix.Stat_t
		if unix.Lstat(p, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
			continue
		}
		if now.Sub(time.Unix(st.Mtim.Unix())) < maxAge {
			continue
		}
		if removeIfUnlocked(p, st) {
			removed++
		}
	}
	return removed
}

// PruneAge is how old an unlocked session dir must be for Prune: a new session's dir
// is locked microseconds after it is made, so a minute leaves no race with a start.
const PruneAge = time.Minute

// Prune removes the session dirs of every project under stateDir
// ($XDG_STATE_HOME/devsandbox: <project>/tmp/<session>) whose lock is free and which
// are older than PruneAge: what runs that could not clean up (SIGKILL) left, sooner
// than CleanOrphans' MaxAge. It returns their paths; with dryRun it removes nothing.
func Prune(stateDir string, now time.Time, dryRun bool) []string {
	projects, err := os.ReadDir(stateDir)
	if err != nil {
		return nil
	}
	var gone []string
	for _, pr := range projects {
		if !pr.IsDir() {
			continue
		}
		base := filepath.Join(stateDir, pr.Name(), "tmp")
		var names []string
		_ = dirent.ReadDir(base, 1024, func(name string, typ byte) bool {
			if typ == unix.DT_DIR || typ == unix.DT_UNKNOWN {
				names = append(names, name)
			}
			return true
		})
		for _, name := range names {
			p := filepath.Join(base, name)
			var st unix.Stat_t
			if unix.Lstat(p, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR || now.Sub(time.Unix(st.Mtim.Unix())) < PruneAge {
				continue
			}
			if dryRun && unlocked(p) || !dryRun && removeIfUnlocked(p, st) {
				gone = append(gone, p)
			}
		}
	}
	return gone
}

// Locked reports whether a session holds the dir p locked (Acquire's lock, held by
// this process or another): false when it is free, or cannot be opened as a
// directory without following a link.
func Locked(p string) bool {
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	err = unix.Flock(fd, unix.LOCK_SH|unix.LOCK_NB)
	return errors.Is(err, unix.EWOULDBLOCK)
}

// unlocked reports whether no session holds the dir p.
func unlocked(p string) bool {
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	return unix.Flock(fd, unix.LOCK_SH|unix.LOCK_NB) == nil
}

func removeIfUnlocked(p string, before unix.Stat_t) bool {
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	if unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB) != nil {
		return false // a live session holds it
	}
	var after unix.Stat_t
	if unix.Fstat(fd, &after) != nil || after.Ino != before.Ino || after.Dev != before.Dev {
		return false
	}
	return rmtree.RemoveAll(p) == nil
}

// Held reports whether a run holds a session dir under base, or may be about to: a
// project's runs going on, which `sandboxes prune` must not take for an unused
// project's. A dir younger than PruneAge counts without asking its lock: the probe
// takes the lock shared for a moment, and a session locking its new dir just then
// would fail to start.
func Held(base string, now time.Time) bool {
	held := false
	_ = dirent.ReadDir(base, 1024, func(name string, typ byte) bool {
		if typ != unix.DT_DIR && typ != unix.DT_UNKNOWN {
			return true
		}
		p := filepath.Join(base, name)
		var st unix.Stat_t
		if unix.Lstat(p, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
			return true
		}
		held = now.Sub(time.Unix(st.Mtim.Unix())) < PruneAge || !unlocked(p)
		return !held
	})
	return held
}
