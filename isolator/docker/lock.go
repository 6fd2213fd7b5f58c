package docker

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// lockFile takes an exclusive flock on path (created 0600), waiting for another
// holder, and returns the release. Its mtime records the project's last use.
func lockFile(path string) (func(), error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("creating %s: %w", filepath.Dir(path), err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening the lock %s: %w", path, err)
	}
	for {
		err = unix.Flock(int(f.Fd()), unix.LOCK_EX)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("locking %s: %w", path, err)
	}
	touch(path)
	return func() {
		_ = unix.Flock(int(f.Fd()), unix.LOCK_UN)
		f.Close()
	}, nil
}

// waitForMaker waits until no run holds the lock at path (lockFile): one making a
// volume holds it from the volume's creation until its file is in it. It takes and
// drops a shared flock, so runs that only wait do not wait for each other; a missing
// lock file means no run ever made a volume there.
func waitForMaker(path string) error {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("opening the lock %s: %w", path, err)
	}
	defer f.Close()
	for {
		err = unix.Flock(int(f.Fd()), unix.LOCK_SH)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("locking %s: %w", path, err)
	}
	return unix.Flock(int(f.Fd()), unix.LOCK_UN)
}
