// Package dirent reads directories with getdents64(2) directly. os.File registers
// every file it opens with the runtime's poller (two fcntl and an epoll_ctl, and an
// epoll_ctl again at close), and os.ReadDir sorts what it read; a launch lists a few
// small directories where that is most of the cost.
package dirent

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io/fs"
	"unsafe"

	"golang.org/x/sys/unix"
)

// header is the fixed part of struct linux_dirent64: d_ino, d_off, d_reclen, d_type;
// the NUL-terminated name follows.
const header = int(unsafe.Offsetof(unix.Dirent{}.Name))

// Read calls each for the entries of the open directory fd but "." and "..", in
// directory order, reading bufSize bytes of them at a time, until each returns false
// or the directory ends. typ is the entry's d_type (unix.DT_UNKNOWN where the file
// system does not report it). It reads from fd's current offset; name is used in
// errors only.
func Read(fd int, name string, bufSize int, each func(name string, typ byte) bool) error {
	buf := make([]byte, max(bufSize, 1024)) // one entry takes at most 280 bytes
	for {
		n, err := unix.Getdents(fd, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return &fs.PathError{Op: "readdirent", Path: name, Err: err}
		}
		if n <= 0 {
			return nil
		}
		for b := buf[:n]; len(b) > 0; {
			if len(b) < header {
				return fmt.Errorf("reading %s: short directory entry", name)
			}
			reclen := int(binary.NativeEndian.Uint16(b[16:18]))
			if reclen < header || reclen > len(b) {
				return fmt.Errorf("reading %s: bad directory entry length %d", name, reclen)
			}
			typ, ent := b[18], b[header:reclen]
			if i := bytes.IndexByte(ent, 0); i >= 0 {
				ent = ent[:i]
			}
			b = b[reclen:]
			if s := string(ent); s != "." && s != ".." && !each(s, typ) {
				return nil
			}
		}
	}
}

// ReadDir is Read on the directory at path, opened for this call only.
func ReadDir(path string, bufSize int, each func(name string, typ byte) bool) error {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return &fs.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	return Read(fd, path, bufSize, each)
}
