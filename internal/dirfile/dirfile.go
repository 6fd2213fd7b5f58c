//go:build unix

// Package dirfile replaces a file in a directory held open, following no link: the
// state files devsandbox rewrites (the docker records) and the files the git watch
// puts back in a project.
package dirfile

import (
	"crypto/rand"
	"encoding/hex"
	"os"

	"golang.org/x/sys/unix"
)

// ReplaceAt writes content to a new file of mode beside name in the directory dirfd
// (a random name, O_EXCL and O_NOFOLLOW: a planted file or link there is neither
// written through nor reused) and renames it over name. The rename replaces a link
// at name rather than following it. On an error the new file is removed.
func ReplaceAt(dirfd int, name string, content []byte, mode uint32) error {
	var rnd [8]byte
	_, _ = rand.Read(rnd[:])
	tmp := "." + name + "." + hex.EncodeToString(rnd[:]) + ".tmp"
	fd, err := unix.Openat(dirfd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, mode)
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
