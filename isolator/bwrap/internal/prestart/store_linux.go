package prestart

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

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
	tmp, err := os.CreateTemp(s.Dir, ".tmp-")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(b)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = unix.Renameat(dir, filepath.Base(tmp.Name()), dir, r.Key)
	}
	if err != nil {
		return fmt.Errorf("saving the launch record: %w", err)
	}
	return nil
}

// Remove deletes the record of key, if any.
func (s Store) Remove(key string) error {
	err := os.Remove(filepath.Join(s.Dir, key))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}
