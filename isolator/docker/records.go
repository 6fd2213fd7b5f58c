package docker

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/devsandbox/devsandbox/internal/dirfile"
)

// maxRecordsSize bounds a records file: the derived-image cache holds about 200
// bytes an entry.
const maxRecordsSize = 4 << 20

// readRecords reads a JSON map of records the docker isolator keeps in the state
// directory (the derived-image cache, the engines' API versions); a missing, damaged
// or oversized file is empty (the images are made again, the version negotiated
// again), and so is anything but a regular file: a link there, or at the directory,
// is not followed.
func readRecords(path string) map[string]string {
	m, _ := loadRecords(path)
	return m
}

// loadRecords is readRecords, with an error when what is at path is not a regular
// file (a link is one: not followed) or cannot be opened.
func loadRecords(path string) (map[string]string, error) {
	dfd, err := unix.Open(filepath.Dir(path), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return map[string]string{}, nil
	}
	if err != nil {
		return map[string]string{}, fmt.Errorf("opening %s (devsandbox makes a directory there; a link is not followed): %w", filepath.Dir(path), err)
	}
	defer unix.Close(dfd)
	fd, err := unix.Openat(dfd, filepath.Base(path), unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return map[string]string{}, nil
	}
	if err != nil {
		return map[string]string{}, fmt.Errorf("opening %s: %w", path, err)
	}
	return readRecordsFrom(os.NewFile(uintptr(fd), path))
}

// readRecordsFrom reads the records in f, and closes it.
func readRecordsFrom(f *os.File) (map[string]string, error) {
	defer f.Close()
	m := map[string]string{}
	fi, err := f.Stat()
	if err != nil {
		return m, fmt.Errorf("reading %s: %w", f.Name(), err)
	}
	if !fi.Mode().IsRegular() {
		return m, fmt.Errorf("%s is not a regular file (%s)", f.Name(), fi.Mode().Type())
	}
	b, err := io.ReadAll(io.LimitReader(f, maxRecordsSize+1))
	if err == nil && len(b) <= maxRecordsSize {
		_ = json.Unmarshal(b, &m)
	}
	return m, nil
}

// writeRecord records value under key in the map at path (updateRecords); one that
// cannot be written is not (the image is made again next time).
func writeRecord(path, key, value string) {
	_ = updateRecords(path, func(m map[string]string) bool {
		m[key] = value
		return true
	})
}

// updateRecords changes the map at path with change, and writes it when change
// reports a change: under a lock (path + ".lock"), so that concurrent writers of other
// keys keep theirs, and atomically, so that a reader never sees half a file: a new
// file of a random name made beside it (O_EXCL), renamed over it. Nothing is followed:
// the directory is opened without following a link at it (one there is an error), and
// the lock, the map and the new file are opened relative to it without following one
// either; a link at path reads as no map and is replaced, the file it names untouched.
func updateRecords(path string, change func(m map[string]string) bool) error {
	dir, name := filepath.Dir(path), filepath.Base(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	dfd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("opening %s (devsandbox makes a directory there; a link is not followed): %w", dir, err)
	}
	defer unix.Close(dfd)
	lfd, err := unix.Openat(dfd, name+".lock", unix.O_RDWR|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return fmt.Errorf("opening the lock %s.lock: %w", path, err)
	}
	defer unix.Close(lfd)
	for {
		err = unix.Flock(lfd, unix.LOCK_EX)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("locking %s.lock: %w", path, err)
	}
	m := map[string]string{}
	if fd, err := unix.Openat(dfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0); err == nil {
		m, _ = readRecordsFrom(os.NewFile(uintptr(fd), path))
	}
	if !change(m) {
		return nil
	}
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	if err := dirfile.ReplaceAt(dfd, name, b, 0o600); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
