package prestart

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Store is the directory of a user's launch records (StateRoot/prestart), one file
// per LaunchKey. Its checks (a private directory of the user's, a regular file of
// the user's, 0600, one link, no link followed) keep out another user's file and an
// accident; they cannot tell a file a sandbox of the same user wrote from one
// devsandbox wrote, which is why a record is trusted for nothing (Vet, Compare).
type Store struct {
	Dir string
}

// ErrNoRecord is wrapped by Load when there is no record for the key.
var ErrNoRecord = errors.New("no launch record")

// openDir opens the store's directory: a directory of the user's, mode 0700, not a
// symbolic link.
func (s Store) openDir() (int, error) {
	fd, err := unix.Open(s.Dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, err
	}
	if int(st.Uid) != os.Geteuid() || st.Mode&0o7777 != 0o700 {
		unix.Close(fd)
		return -1, fmt.Errorf("%w: %s is not a private directory of yours (owner %d, mode %o)", ErrRecord, s.Dir, st.Uid, st.Mode&0o7777)
	}
	return fd, nil
}

// Load reads the record of key (ErrNoRecord when there is none). A file that is not
// a regular file of the user's, mode 0600, with one link, reached without a link,
// or whose record names another key, is ErrRecord.
func (s Store) Load(key string) (*Record, error) {
	dir, err := s.openDir()
	if errors.Is(err, unix.ENOENT) {
		return nil, fmt.Errorf("%w for this launch", ErrNoRecord)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrRecord, err)
	}
	defer unix.Close(dir)
	// O_NONBLOCK: a FIFO planted in its place does not hold the launch.
	fd, err := unix.Openat(dir, key, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return nil, fmt.Errorf("%w for this launch", ErrNoRecord)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: opening %s: %w", ErrRecord, key, err)
	}
	f := os.NewFile(uintptr(fd), filepath.Join(s.Dir, key))
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrRecord, err)
	}
	switch {
	case st.Mode&unix.S_IFMT != unix.S_IFREG:
		return nil, fmt.Errorf("%w: %s is not a regular file", ErrRecord, f.Name())
	case int(st.Uid) != os.Geteuid() || st.Mode&0o7777 != 0o600:
		return nil, fmt.Errorf("%w: %s is not a private file of yours (owner %d, mode %o)", ErrRecord, f.Name(), st.Uid, st.Mode&0o7777)
	case st.Nlink != 1:
		return nil, fmt.Errorf("%w: %s has %d links", ErrRecord, f.Name(), st.Nlink)
	}
	r, err := Decode(f)
	if err != nil {
		return nil, err
	}
	if r.Key != key {
		return nil, fmt.Errorf("%w: %s holds the record of another launch", ErrRecord, f.Name())
	}
	return r, nil
}

// Save writes r under its key, replacing any record there at once (a file of its
// own renamed into place), the directory made 0700 if missing.
func (s Store) Save(r *Record) error {
	b, err := Encode(r)
	if err != nil {
		return err
	}
	if err := os.Mkdir(s.Dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("making the launch records' directory: %w", err)
	}
	dir, err := s.openDir()
	if err != nil {
		return err
	}
	defer unix.Close(dir)
	if afterOpenDir != nil {
		afterOpenDir()
	}
	// The temporary file is made, written, renamed and (on failure) removed relative
	// to the directory opened and checked above, never by its path again: a path
	// swapped for a link meanwhile leads nowhere.
	name, tmp, err := createTempAt(dir, filepath.Join(s.Dir, ".tmp-"))
	if err != nil {
		return fmt.Errorf("saving the launch record: %w", err)
	}
	_, err = tmp.Write(b)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = unix.Renameat(dir, name, dir, r.Key)
	}
	if err != nil {
		_ = unix.Unlinkat(dir, name, 0)
		return fmt.Errorf("saving the launch record: %w", err)
	}
	if _, err := trim(dir, MaxRecords, time.Time{}, false); err != nil {
		return fmt.Errorf("bounding the launch records: %w", err)
	}
	return nil
}

// createTempAt creates a new file ".tmp-" and a random number in the directory dir,
// mode 0600, not following a link, and returns its name there and the file opened
// for writing (named for messages as prefix and the number).
func createTempAt(dir int, prefix string) (string, *os.File, error) {
	for range 100 {
		name := ".tmp-" + strconv.FormatUint(uint64(rand.Uint32()), 10)
		fd, err := unix.Openat(dir, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
		if errors.Is(err, unix.EEXIST) {
			continue
		}
		if err != nil {
			return "", nil, err
		}
		return name, os.NewFile(uintptr(fd), prefix+strings.TrimPrefix(name, ".tmp-")), nil
	}
	return "", nil, fmt.Errorf("no free temporary name in %s", filepath.Dir(prefix))
}

// afterOpenDir, when set (tests), runs in Save right after the directory is opened:
// where a swap of the directory's path would land.
var afterOpenDir func()

// MaxRecords bounds the store: Save removes the records least recently written or
// used (Touch) beyond it.
const MaxRecords = 64

// Touch marks the record of key as used now (its modification time), so that
// Save's bound and Sweep keep it: a record an early start adopted is not written
// again. The name is not followed.
func (s Store) Touch(key string) error {
	dir, err := s.openDir()
	if err != nil {
		return err
	}
	defer unix.Close(dir)
	now := []unix.Timespec{{Nsec: unix.UTIME_NOW}, {Nsec: unix.UTIME_NOW}}
	return unix.UtimesNanoAt(dir, key, now, unix.AT_SYMLINK_NOFOLLOW)
}

// Sweep removes the records not written or used (Touch) since maxAge before now,
// and what an interrupted Save left (a temporary file over a minute old); with
// dryRun it removes nothing. It returns the paths removed (or that would be). Only
// regular files of the user's named as a record or a Save's temporary file are
// removed, through the store's directory opened without following a link; nothing
// is followed, and a directory, a link or another file there is left alone. No
// directory, nothing to do.
func (s Store) Sweep(maxAge time.Duration, now time.Time, dryRun bool) ([]string, error) {
	dir, err := s.openDir()
	if errors.Is(err, unix.ENOENT) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer unix.Close(dir)
	names, err := trim(dir, MaxRecords, now.Add(-maxAge), dryRun)
	for i, n := range names {
		names[i] = filepath.Join(s.Dir, n)
	}
	return names, err
}

// tmpAge is how old a Save's temporary file must be for Sweep to take it for one an
// interrupted Save left: a Save takes milliseconds.
const tmpAge = time.Minute

// entry is a file of the store's directory trim may remove.
type entry struct {
	name  string
	mtime time.Time
}

// trim removes, from the store's directory dir, the records beyond the max most
// recent, and (before, when not zero) those older than before and the temporary
// files of a Save older than tmpAge before it; with dryRun it removes nothing. It
// returns the names removed. Only a regular file of the user's with a record's or a
// temporary file's name counts; each is looked at and removed relative to dir,
// without following a link (unlinkat removes a name, never what a link names).
func trim(dir, max int, before time.Time, dryRun bool) ([]string, error) {
	d, err := unix.Openat(dir, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(d), ".")
	names, err := f.Readdirnames(-1)
	f.Close()
	if err != nil {
		return nil, err
	}
	if before.IsZero() && len(names) <= max {
		return nil, nil // the common case: one getdents, no stat
	}
	var recs, gone []entry
	for _, n := range names {
		tmp := strings.HasPrefix(n, ".tmp-")
		if !tmp && !isKey(n) {
			continue
		}
		var st unix.Stat_t
		if unix.Fstatat(dir, n, &st, unix.AT_SYMLINK_NOFOLLOW) != nil ||
			st.Mode&unix.S_IFMT != unix.S_IFREG || int(st.Uid) != os.Geteuid() {
			continue
		}
		e := entry{n, time.Unix(st.Mtim.Unix())}
		switch {
		case tmp:
			if !before.IsZero() && e.mtime.Before(before.Add(-tmpAge)) {
				gone = append(gone, e)
			}
		case !before.IsZero() && e.mtime.Before(before):
			gone = append(gone, e)
		default:
			recs = append(recs, e)
		}
	}
	if len(recs) > max {
		slices.SortFunc(recs, func(a, b entry) int {
			if c := a.mtime.Compare(b.mtime); c != 0 {
				return -c // the most recent first
			}
			return strings.Compare(a.name, b.name)
		})
		gone = append(gone, recs[max:]...)
	}
	var removed []string
	var rerr error
	for _, e := range gone {
		if !dryRun {
			if err := unix.Unlinkat(dir, e.name, 0); err != nil {
				if !errors.Is(err, unix.ENOENT) && rerr == nil {
					rerr = fmt.Errorf("removing %s: %w", e.name, err)
				}
				continue
			}
		}
		removed = append(removed, e.name)
	}
	return removed, rerr
}

// isKey reports whether name has a LaunchKey's form.
func isKey(name string) bool {
	return len(name) == 32 && strings.Trim(name, "0123456789abcdef") == ""
}

// Remove deletes the record of key, if any.
func (s Store) Remove(key string) error {
	_, err := s.remove(key)
	return err
}

// remove deletes the record of key, and reports whether there was one.
func (s Store) remove(key string) (bool, error) {
	err := os.Remove(filepath.Join(s.Dir, key))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return false, err
	}
	return err == nil, nil
}

// Forget removes the record of key and, when there was one, every record whose
// session /tmp directory is tmpBase (the records of the same project's other
// command lines, sandbox.tmp = "session"); it returns how many it removed. The
// records are read as Load reads them (one it refuses is left to Sweep), and removed
// by name relative to the store's directory, nothing followed. A record whose /tmp is
// in memory names no project and stays (the bound and Sweep remove it).
func (s Store) Forget(key, tmpBase string) (int, error) {
	had, err := s.remove(key)
	if err != nil || !had {
		return 0, err
	}
	n := 1
	if tmpBase == "" {
		return n, nil
	}
	dir, err := s.openDir()
	if err != nil {
		return n, err
	}
	defer unix.Close(dir)
	d, err := unix.Openat(dir, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return n, err
	}
	f := os.NewFile(uintptr(d), s.Dir)
	names, err := f.Readdirnames(-1)
	f.Close()
	if err != nil {
		return n, err
	}
	for _, name := range names {
		if !isKey(name) {
			continue
		}
		if r, err := s.Load(name); err != nil || r.TmpBase != tmpBase {
			continue
		}
		if err := unix.Unlinkat(dir, name, 0); err == nil {
			n++
		} else if !errors.Is(err, unix.ENOENT) {
			return n, fmt.Errorf("removing %s: %w", name, err)
		}
	}
	return n, nil
}

// Count returns how many files of the store's directory are named as records (for
// doctor: nothing is opened but the directory, no link followed).
func (s Store) Count() int {
	dir, err := s.openDir()
	if err != nil {
		return 0
	}
	defer unix.Close(dir)
	d, err := unix.Openat(dir, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0
	}
	f := os.NewFile(uintptr(d), s.Dir)
	defer f.Close()
	names, _ := f.Readdirnames(-1)
	n := 0
	for _, name := range names {
		if isKey(name) {
			n++
		}
	}
	return n
}
