package planner

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Directories are read here with getdents64(2) directly, into a buffer sized to what
// is wanted: os.File registers every file with the runtime's poller (two fcntl and an
// epoll_ctl a directory) and reads 8 KiB of entries at a time, so asking whether
// /etc/alternatives holds more than 32 names read all of its 200-odd (about 95 µs
// against 30 µs here).

// direntHeader is the fixed part of struct linux_dirent64: d_ino, d_off, d_reclen,
// d_type; the NUL-terminated name follows.
const direntHeader = int(unsafe.Offsetof(unix.Dirent{}.Name))

// readDirN is Probe.ReadDirN on the host: at most n entries of dir, in directory
// order, without "." and "..". An entry's type comes from d_type, or from lstat(2)
// where the file system does not report it (as os.ReadDir does).
func readDirN(dir string, n int) ([]fs.DirEntry, error) {
	var out []fs.DirEntry
	err := getdents(dir, 32*(n+2), func(name string, typ byte) bool {
		e := &dirent{dir: dir, name: name, typ: modeOf(typ)}
		if typ == unix.DT_UNKNOWN {
			fi, err := os.Lstat(filepath.Join(dir, name))
			if err != nil {
				return true // gone since it was listed
			}
			e.typ = fi.Mode().Type()
		}
		out = append(out, e)
		return len(out) < n
	})
	return out, err
}

// listNames returns the names in dir, or nil when it cannot be read, holds more than
// listedMax names, or may not be searched (see statCache.listDirs): then lstat(2)
// below it would fail with EACCES, not ENOENT.
func listNames(dir string) (map[string]struct{}, error) {
	if err := unix.Faccessat(unix.AT_FDCWD, dir, unix.X_OK, unix.AT_EACCESS); err != nil {
		return nil, err
	}
	set := map[string]struct{}{}
	err := getdents(dir, 8192, func(name string, _ byte) bool {
		set[name] = struct{}{}
		return len(set) <= listedMax
	})
	if err != nil || len(set) > listedMax {
		return nil, err
	}
	return set, nil
}

// getdents calls each for the entries of dir but "." and "..", reading bufSize bytes
// of them at a time, until each returns false or the directory ends.
func getdents(dir string, bufSize int, each func(name string, typ byte) bool) error {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return &fs.PathError{Op: "open", Path: dir, Err: err}
	}
	defer unix.Close(fd)
	buf := make([]byte, max(bufSize, 1024)) // one entry takes at most 280 bytes
	for {
		n, err := unix.Getdents(fd, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return &fs.PathError{Op: "readdirent", Path: dir, Err: err}
		}
		if n <= 0 {
			return nil
		}
		for b := buf[:n]; len(b) > 0; {
			if len(b) < direntHeader {
				return fmt.Errorf("reading %s: short directory entry", dir)
			}
			reclen := int(binary.NativeEndian.Uint16(b[16:18]))
			if reclen < direntHeader || reclen > len(b) {
				return fmt.Errorf("reading %s: bad directory entry length %d", dir, reclen)
			}
			typ, name := b[18], b[direntHeader:reclen]
			if i := bytes.IndexByte(name, 0); i >= 0 {
				name = name[:i]
			}
			b = b[reclen:]
			if s := string(name); s != "." && s != ".." && !each(s, typ) {
				return nil
			}
		}
	}
}

// modeOf is the file type of a d_type (DT_UNKNOWN: none known).
func modeOf(typ byte) fs.FileMode {
	switch typ {
	case unix.DT_DIR:
		return fs.ModeDir
	case unix.DT_LNK:
		return fs.ModeSymlink
	case unix.DT_FIFO:
		return fs.ModeNamedPipe
	case unix.DT_SOCK:
		return fs.ModeSocket
	case unix.DT_CHR:
		return fs.ModeDevice | fs.ModeCharDevice
	case unix.DT_BLK:
		return fs.ModeDevice
	}
	return 0
}

// dirent is an fs.DirEntry read by getdents.
type dirent struct {
	dir, name string
	typ       fs.FileMode
}

func (e *dirent) Name() string               { return e.name }
func (e *dirent) IsDir() bool                { return e.typ.IsDir() }
func (e *dirent) Type() fs.FileMode          { return e.typ }
func (e *dirent) Info() (fs.FileInfo, error) { return os.Lstat(filepath.Join(e.dir, e.name)) }
func (e *dirent) String() string             { return fs.FormatDirEntry(e) }
