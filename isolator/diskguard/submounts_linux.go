package diskguard

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/devsandbox/devsandbox/internal/mountinfo"
	"github.com/devsandbox/devsandbox/isolator"
)

// mountTable is the mount table pinSubmounts reads: devsandbox's own namespace,
// which every isolator's binds copy (bwrap's namespace and a local engine's).
const mountTable = "/proc/self/mountinfo"

// pinAttempts bounds pinSubmounts' reads of the mount table: a mount that moves
// between the read and its open is looked up again, then the run does not start.
const pinAttempts = 3

// pinSubmounts opens, into pins, each file system mounted below one of dirs (whose
// pins it reads the real paths of: a dir given through a link) that a path reaches
// (Below), and returns their mount points. Each one opened is checked to be the mount
// the table names (its mount ID, or its device where the kernel has no mount IDs,
// before 5.8): the sandbox of another session of the project may move a directory
// above a mount point and put a link in its place between the read and the open. A
// mount table that cannot be read, or a mount point that cannot be opened, is an
// error: the run does not start.
func pinSubmounts(pins map[string]int, dirs []string) ([]string, error) {
	return pinSubmountsWith(pins, dirs, listmount)
}

// pinSubmountsWith is pinSubmounts asking list, first, whether any mount lies
// below the mounts holding the directories (noneBelow); if none does, the mount
// table is not read.
func pinSubmountsWith(pins map[string]int, dirs []string, list listMounts) ([]string, error) {
	fds := make([]int, 0, len(dirs))
	for _, d := range dirs {
		if fd, ok := pins[d]; ok {
			fds = append(fds, fd)
		}
	}
	if noneBelow(fds, list) {
		return nil, nil
	}
	var real []string
	for _, d := range dirs {
		fd, ok := pins[d]
		if !ok {
			continue // missing at the start: unwatched, as PinStatfs leaves it
		}
		real = append(real, d)
		if r, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd)); err == nil && r != d {
			real = append(real, r)
		}
	}
	var moved error
	for range pinAttempts {
		b, err := readTable(mountTable)
		if err != nil {
			return nil, fmt.Errorf("reading the mount table (%s) to watch the file systems mounted below the directories the sandbox writes for sandbox.disk_reserve: %w; mount /proc, or turn the reserve off (sandbox.disk_reserve = \"0\")", mountTable, err)
		}
		var points []string
		opened := map[string]int{}
		moved = nil
		for _, e := range belowIn(b, real) {
			if _, ok := pins[e.Point]; ok {
				continue
			}
			fd, err := openPin(e.Point)
			if err == nil && !isMount(fd, e) {
				unix.Close(fd)
				err = &os.PathError{Op: "open", Path: e.Point, Err: errMoved}
			}
			if errors.Is(err, os.ErrNotExist) || errors.Is(err, errMoved) {
				moved = err
				break
			}
			if err != nil {
				closeAll(opened)
				return nil, fmt.Errorf("opening %s, a file system mounted below a directory the sandbox writes, to watch its free space for sandbox.disk_reserve: %w", e.Point, err)
			}
			opened[e.Point] = fd
			points = append(points, e.Point)
		}
		if moved == nil {
			for p, fd := range opened {
				pins[p] = fd
			}
			return points, nil
		}
		closeAll(opened)
	}
	return nil, fmt.Errorf("watching the file systems mounted below the directories the sandbox writes for sandbox.disk_reserve: the mount table changed while it was read, %d times: %w; run again once the mounts there settle", pinAttempts, moved)
}

// readTable is the text of the mount table at path, read into one buffer: os.ReadFile
// of a /proc file (whose size reads 0) registers it with the poller and reads 512
// bytes first, then more, and the kernel walks the table again at each read (seven
// reads of a 4 KiB table: three times the kernel time of one, measured).
func readTable(path string) ([]byte, error) {
	fd, err := openRetry(path)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	b := make([]byte, 0, 16<<10)
	for {
		if len(b) == cap(b) {
			b = slices.Grow(b, cap(b))
		}
		n, err := unix.Read(fd, b[len(b):cap(b)])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, &os.PathError{Op: "read", Path: path, Err: err}
		}
		if n == 0 {
			return b, nil
		}
		b = b[:len(b)+n]
	}
}

// openRetry opens path to read.
func openRetry(path string) (int, error) {
	for {
		fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return -1, &os.PathError{Op: "open", Path: path, Err: err}
		}
		return fd, nil
	}
}

// errMoved is a mount point that, opened, is not the mount the table named there.
var errMoved = errors.New("what is there now is not the mount the mount table named")

// isMount reports whether fd lies in the mount e: the same mount ID, or, on a kernel
// without mount IDs in statx, the same device. AT_STATX_DONT_SYNC: a network or FUSE
// file system is not asked for its attributes (the mount ID is the kernel's own).
func isMount(fd int, e mountinfo.Entry) bool {
	var st unix.Statx_t
	if err := unix.Statx(fd, "", unix.AT_EMPTY_PATH|unix.AT_SYMLINK_NOFOLLOW|unix.AT_STATX_DONT_SYNC, unix.STATX_MNT_ID, &st); err != nil {
		return false
	}
	if st.Mask&unix.STATX_MNT_ID != 0 {
		return st.Mnt_id == uint64(e.ID)
	}
	return fmt.Sprintf("%d:%d", st.Dev_major, st.Dev_minor) == e.Dev
}

// Watched is what a run of p would watch now, for doctor: Paths(p), then each file
// system mounted below one of them (Below), found as For finds them but not opened.
// A mount table that cannot be read adds nothing (a run would refuse to start).
func Watched(p *isolator.Plan) []string {
	paths := Paths(p)
	b, err := readTable(mountTable)
	if err != nil {
		return paths
	}
	dirs := slices.Clone(paths)
	for _, d := range paths {
		if r, err := filepath.EvalSymlinks(d); err == nil && r != d {
			dirs = append(dirs, r)
		}
	}
	for _, e := range belowIn(b, dirs) {
		if !slices.Contains(paths, e.Point) {
			paths = append(paths, e.Point)
		}
	}
	return paths
}
