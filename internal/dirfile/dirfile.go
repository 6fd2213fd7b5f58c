//go:build unix

// Package dirfile writes files in a directory held open, following no link: the
// state files devsandbox rewrites (the docker records, ReplaceAt) and the files the
// git watch puts back in a project a sandbox can write (LinkAt).
package dirfile

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// ErrSwapped is LinkAt's error when another process took the random name of the new
// file before it was linked (on a file system without O_TMPFILE): nothing was put at
// the name.
var ErrSwapped = errors.New("another process replaced the new file's temporary name before it was linked")

// ReplaceAt writes content to a new file of mode beside name in the directory dirfd
// (a random name, O_EXCL and O_NOFOLLOW: a planted file or link there is neither
// written through nor reused) and renames it over name. The rename replaces a link
// at name rather than following it. On an error the new file is removed.
//
// The rename moves whatever holds the random name by then: only for directories no
// one else can write (devsandbox's state). In a directory a sandbox can write, use
// LinkAt.
func ReplaceAt(dirfd int, name string, content []byte, mode uint32) error {
	fd, tmp, err := createTemp(dirfd, name, mode)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(fd), tmp)
	_, err = f.Write(content)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = unix.Renameat(dirfd, tmp, dirfd, name)
	}
	if err != nil {
		_ = unix.Unlinkat(dirfd, tmp, 0)
	}
	return err
}

// createTemp makes a new file of mode under a random name beside name (tmp), with
// O_EXCL and O_NOFOLLOW: a planted file or link there is neither written through nor
// reused.
func createTemp(dirfd int, name string, mode uint32) (fd int, tmp string, err error) {
	var rnd [8]byte
	_, _ = rand.Read(rnd[:])
	tmp = "." + name + "." + hex.EncodeToString(rnd[:]) + ".tmp"
	fd, err = unix.Openat(dirfd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, mode)
	if err != nil {
		return -1, "", err
	}
	return fd, tmp, nil
}
