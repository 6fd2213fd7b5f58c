// Package dirent reads directories with getdents64(2) directly. os.File registers
// every file it opens with the runtime's poller (two fcntl and an epoll_ctl, and an
// epoll_ctl again at close), and os.ReadDir sorts what it read; a launch lists a few
// small directories where that is most of the cost. The planner, the mask scan,
// etcsnap and tmpdir all parse the records here (Records), so they agree with each
// other and with os.ReadDir on which entries a directory has.
package dirent

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io/fs"
	"unsafe"

	"golang.org/x/sys/unix"
)

// header is the fixed part of struct linux_dirent64: d_ino (u64), d_off (s64),
// d_reclen (u16), d_type (u8); the name follows, NUL-terminated and padded.
const header = int(unsafe.Offsetof(unix.Dirent{}.Name))

// Records walks the records of one getdents64(2) result: buf[:n] for the n it
// returned. The zero value has none.
type Records struct {
	b   []byte
	off int // of b[0] in the result, for errors
	err error
}

// Parse returns the records of buf, what one getdents64(2) call wrote.
func Parse(buf []byte) Records { return Records{b: buf} }

// Next returns the next entry, skipping "." and "..", entries of inode 0 (as
// os.ReadDir does: a deleted entry some file systems still return) and empty names.
// name is a view of the buffer, valid until it is reused: copy what is kept. typ is
// the d_type (unix.DT_UNKNOWN where the file system does not report it). ok is false
// at the end of the buffer or at a malformed record, after which Err says which and
// Next returns no more. A name with no NUL before the record's end runs to its end.
func (r *Records) Next() (name []byte, typ byte, ok bool) {
	for len(r.b) > 0 {
		if len(r.b) < header {
			r.fail(fmt.Errorf("short directory entry (%d bytes) at byte %d: %w", len(r.b), r.off, unix.EIO))
			return nil, 0, false
		}
		reclen := int(binary.NativeEndian.Uint16(r.b[16:18]))
		if reclen < header || reclen > len(r.b) {
			r.fail(fmt.Errorf("bad directory entry length %d at byte %d (%d left): %w", reclen, r.off, len(r.b), unix.EIO))
			return nil, 0, false
		}
		ino := binary.NativeEndian.Uint64(r.b[0:8])
		typ, name = r.b[18], r.b[header:reclen]
		r.b, r.off = r.b[reclen:], r.off+reclen
		if i := bytes.IndexByte(name, 0); i >= 0 {
			name = name[:i]
		}
		if ino == 0 || len(name) == 0 || string(name) == "." || string(name) == ".." {
			continue
		}
		return name, typ, true
	}
	return nil, 0, false
}

// Err is the malformed record that ended Next early, or nil. It wraps unix.EIO.
func (r *Records) Err() error { return r.err }

func (r *Records) fail(err error) { r.b, r.err = nil, err }

// Getdents is getdents64(2) into buf, retried on EINTR: the number of bytes of
// records written to buf, 0 at the end of the directory.
func Getdents(fd int, buf []byte) (int, error) {
	for {
		n, err := unix.Getdents(fd, buf)
		if err != unix.EINTR {
			return n, err
		}
	}
}

// Read calls each for the entries of the open directory fd (as Records.Next returns
// them, the name copied), in directory order, reading bufSize bytes of them at a
// time, until each returns false or the directory ends. It reads from fd's current
// offset; name is used in errors only.
func Read(fd int, name string, bufSize int, each func(name string, typ byte) bool) error {
	buf := make([]byte, max(bufSize, 1024)) // one entry takes at most 280 bytes
	for {
		n, err := Getdents(fd, buf)
		if err != nil {
			return &fs.PathError{Op: "readdirent", Path: name, Err: err}
		}
		if n <= 0 {
			return nil
		}
		recs := Parse(buf[:n])
		for {
			ent, typ, ok := recs.Next()
			if !ok {
				break
			}
			if !each(string(ent), typ) {
				return nil
			}
		}
		if err := recs.Err(); err != nil {
			return &fs.PathError{Op: "readdirent", Path: name, Err: err}
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
