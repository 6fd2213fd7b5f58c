package etcsnap

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/devsandbox/devsandbox/internal/dirent"
)

// errInvalid marks a snapshot directory that is not what its key describes.
var errInvalid = errors.New("not a sealed snapshot")

// errBusy marks a snapshot that is being pruned right now.
var errBusy = errors.New("being pruned")

// Snapshot is a snapshot in use: its directory, open and share-locked until Close.
type Snapshot struct {
	Path  string // the directory, for people (bwrap mounts Dir)
	Key   string
	Built bool // built by this call rather than reused
	// Entries is what the snapshot holds: the entries it was opened for, each tree
	// that is not copied (Notes says why) as a mount point its caller binds it over.
	Entries []Entry
	// Notes says which trees are bound instead of copied, and why.
	Notes []string
	dir   *os.File
}

// Dir returns a new O_PATH descriptor of the snapshot directory, the very one that
// was checked, for bwrap to mount (--ro-bind-fd); the caller closes it.
func (s *Snapshot) Dir() (*os.File, error) {
	fd, err := unix.Openat(int(s.dir.Fd()), ".", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("reopening the /etc snapshot %s: %w", s.Path, err)
	}
	return os.NewFile(uintptr(fd), s.Path), nil
}

// Close releases the lock: the snapshot may be pruned once no other run holds it.
func (s *Snapshot) Close() error { return s.dir.Close() }

// Open returns the snapshot of entries under root, reusing the one whose key matches
// and building it otherwise. now is the time the racy check compares with. An error
// means no snapshot is usable this time (the caller copies the files instead); it
// wraps ErrRacy when a source changed too recently to be keyed safely.
func Open(root string, entries []Entry, now time.Time) (*Snapshot, error) {
	if err := Validate(entries); err != nil {
		return nil, err
	}
	rfd, err := openRoot(root)
	if err != nil {
		return nil, err
	}
	defer unix.Close(rfd)
	var idx *treeIndex
	for _, e := range entries {
		if e.Tree {
			idx = loadIndex(rfd, entries)
			break
		}
	}
	s, kd, err := openWith(rfd, root, entries, now, idx)
	if errors.Is(err, errStale) {
		// The trees' record does not describe the snapshot: walked and checked in full.
		s, kd, err = openWith(rfd, root, entries, now, nil)
	}
	if err != nil {
		return nil, err
	}
	if kd.walked != nil {
		saveIndex(rfd, int(s.dir.Fd()), s.Key, kd)
	}
	return s, nil
}

// openWith is Open with the root open as rfd and the index of its trees, if any.
func openWith(rfd int, root string, entries []Entry, now time.Time, idx *treeIndex) (*Snapshot, *keyed, error) {
	k, kd, err := key(entries, now, idx)
	if err != nil {
		return nil, nil, err
	}
	s, err := reuse(rfd, root, k, kd)
	switch {
	case err == nil:
		return s, kd, nil
	case errors.Is(err, errStale):
		return nil, nil, err
	case errors.Is(err, errInvalid):
		// Damaged, or not ours: out of the way (never followed), then built afresh.
		discard(rfd, k)
	case !errors.Is(err, unix.ENOENT):
		return nil, nil, fmt.Errorf("the /etc snapshot %s: %w", Path(root, k), err)
	}
	if kd.idx != nil {
		return nil, nil, errStale // a build needs the walks
	}
	if err := build(rfd, k, kd); err != nil {
		return nil, nil, fmt.Errorf("building the /etc snapshot in %s: %w", root, err)
	}
	if s, err = reuse(rfd, root, k, kd); err != nil {
		return nil, nil, fmt.Errorf("the /etc snapshot %s: %w", Path(root, k), err)
	}
	s.Built = true
	prune(rfd, Keep, k, now)
	return s, kd, nil
}

// openRoot creates root (0700) when missing and opens it. It must be a directory owned
// by the user that nobody else can write: a snapshot is only as sound as its root.
func openRoot(root string) (int, error) {
	const flags = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC
	fd, err := unix.Open(root, flags, 0)
	if err == unix.ENOENT { // created only when missing: os.MkdirAll would stat it first
		if err := os.MkdirAll(root, 0o700); err != nil {
			return -1, err
		}
		fd, err = unix.Open(root, flags, 0)
	}
	if err != nil {
		return -1, fmt.Errorf("opening %s: %w", root, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, err
	}
	if int(st.Uid) != os.Geteuid() || st.Mode&0o022 != 0 {
		unix.Close(fd)
		return -1, fmt.Errorf("%s: owned by uid %d with mode %o; it must be the user's own and writable by nobody else", root, st.Uid, st.Mode&0o7777)
	}
	return fd, nil
}

// reuse opens the snapshot k, share-locks it and checks it against entries: a
// directory (not a link) owned by the user, mode 0555, holding exactly the top-level
// names entries imply, each with its kind and mode, each copy with its source's size.
// ENOENT: there is none. errInvalid: what is there is something else.
func reuse(rfd int, root, k string, kd *keyed) (*Snapshot, error) {
	fd, err := unix.Openat(rfd, k, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	switch {
	case errors.Is(err, unix.ENOENT):
		return nil, err
	case errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR):
		return nil, fmt.Errorf("%w: a symbolic link or a file", errInvalid)
	case err != nil:
		return nil, err
	}
	dir := os.NewFile(uintptr(fd), Path(root, k))
	if err := unix.Flock(fd, unix.LOCK_SH|unix.LOCK_NB); err != nil {
		dir.Close()
		return nil, fmt.Errorf("%w: %w", errBusy, err)
	}
	if err := check(rfd, fd, k, kd); err != nil {
		dir.Close()
		return nil, err
	}
	return &Snapshot{Path: dir.Name(), Key: k, Entries: kd.entries, Notes: kd.notes, dir: dir}, nil
}

// check verifies the open snapshot fd against entries (see reuse), and that the name
// k still refers to it: a pruner that renamed it away between the open and the lock
// leaves a directory that is about to be emptied.
func check(rfd, fd int, k string, kd *keyed) error {
	entries, stamps := kd.entries, kd.stamps
	uid := uint32(os.Geteuid())
	var st, named unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if err := unix.Fstatat(rfd, k, &named, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return err
	}
	if named.Dev != st.Dev || named.Ino != st.Ino {
		return fmt.Errorf("%w: replaced while it was opened", errBusy)
	}
	if st.Uid != uid || st.Mode&0o7777 != 0o555 {
		return fmt.Errorf("%w: owned by uid %d with mode %o", errInvalid, st.Uid, st.Mode&0o7777)
	}
	top := map[string]bool{}
	for _, d := range dirs(entries) {
		top[strings.SplitN(d, "/", 2)[0]] = true
		if err := checkEntry(fd, d, uid, unix.S_IFDIR, 0o555, -1); err != nil {
			return err
		}
	}
	for i, e := range entries {
		top[strings.SplitN(e.Name, "/", 2)[0]] = true
		if e.Dir {
			continue
		}
		if e.Tree {
			if kd.idx != nil {
				continue // below
			}
			if err := checkTree(fd, e.Name, kd.trees[i], uid); err != nil {
				return err
			}
			continue
		}
		size := int64(len(e.Content))
		if e.Source != "" && !stamps[i].missing {
			size = stamps[i].size
		}
		if err := checkEntry(fd, e.Name, uid, unix.S_IFREG, 0o444, size); err != nil {
			return err
		}
	}
	if kd.idx != nil {
		if err := kd.idx.checkSnap(fd, k); err != nil {
			return err
		}
	}
	// Nothing else at the top: a name added there (ld.so.preload, say) would be seen
	// by every program in the sandbox.
	names, err := readNames(fd)
	if err != nil {
		return err
	}
	if len(names) != len(top) {
		return fmt.Errorf("%w: holds %d names, not %d", errInvalid, len(names), len(top))
	}
	for _, n := range names {
		if !top[n] {
			return fmt.Errorf("%w: holds %s", errInvalid, n)
		}
	}
	return nil
}

func checkEntry(fd int, name string, uid, kind, mode uint32, size int64) error {
	var st unix.Stat_t
	if err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return fmt.Errorf("%w: %s: %w", errInvalid, name, err)
	}
	ok := st.Mode&unix.S_IFMT == kind && st.Mode&0o7777 == mode && st.Uid == uid
	if kind == unix.S_IFREG {
		ok = ok && st.Nlink == 1 && st.Size == size
	}
	if !ok {
		return fmt.Errorf("%w: %s has mode %o, size %d", errInvalid, name, st.Mode, st.Size)
	}
	return nil
}

// readNames lists the directory fd (without reading from its offset: a new
// descriptor of the same directory), with getdents64 directly (package dirent).
func readNames(fd int) ([]string, error) {
	d, err := unix.Openat(fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(d)
	var names []string
	err = dirent.Read(d, ".", 2048, func(name string, _ byte) bool {
		names = append(names, name)
		return true
	})
	return names, err
}

// build writes the snapshot k into a private temporary directory under rfd, seals it
// (0444 files, 0555 directories), makes it durable and renames it into place. Losing
// the race to a concurrent build of the same key is success: theirs is the same
// snapshot.
//
// Only the rename makes a snapshot usable (reuse opens nothing but a key's name), and
// it comes after every file and directory of the copy is on disk (syncer): a crash or
// a kill at any point before it leaves a temporary directory that no launch uses and
// pruning removes (staleTmp); one after it leaves a complete snapshot.
func build(rfd int, k string, kd *keyed) (err error) {
	entries, stamps := kd.entries, kd.stamps
	tmp := tmpPrefix + randomName()
	if err := unix.Mkdirat(rfd, tmp, 0o700); err != nil {
		return err
	}
	sy := &syncer{}
	defer func() {
		if err != nil {
			sy.abandon()
			_ = removeAt(rfd, tmp)
		}
	}()
	tfd, err := unix.Openat(rfd, tmp, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(tfd)
	ds := dirs(entries)
	for _, d := range ds {
		if err := withParent(tfd, d, func(pfd int, base string) error { return unix.Mkdirat(pfd, base, 0o700) }); err != nil {
			return err
		}
	}
	for i, e := range entries {
		if e.Dir {
			continue
		}
		if e.Tree {
			if err := buildTree(tfd, e.Name, e.Source, kd.trees[i], sy); err != nil {
				return err
			}
			continue
		}
		if err := withParent(tfd, e.Name, func(pfd int, base string) error { return writeEntry(pfd, base, e, stamps[i], sy) }); err != nil {
			return err
		}
	}
	for i := len(ds) - 1; i >= 0; i-- {
		if err := withParent(tfd, ds[i], func(pfd int, base string) error { return sealDir(pfd, base, sy) }); err != nil {
			return err
		}
	}
	if err := unix.Fchmod(tfd, 0o555); err != nil {
		return err
	}
	if err := buildStep("sync", sy.count); err != nil {
		return err
	}
	if err := sy.flush(); err != nil {
		return err
	}
	if err := unix.Fsync(tfd); err != nil {
		return err
	}
	if err := buildStep("rename", sy.synced); err != nil {
		return err
	}
	err = unix.Renameat2(rfd, tmp, rfd, k, unix.RENAME_NOREPLACE)
	if errors.Is(err, unix.EEXIST) {
		return removeAt(rfd, tmp) // a concurrent launch built it first
	}
	if err != nil {
		return err
	}
	if err := buildStep("renamed", sy.synced); err != nil {
		return err
	}
	return unix.Fsync(rfd)
}

// buildHook, set by tests only, is called at each step of a build: "write" after
// each file is written (n: the files and directories written so far), "sync" before
// the copy is made durable (n: the same), "rename" before it is renamed into place
// and "renamed" after (n: the files and directories fsynced). An error fails the
// build there.
var buildHook func(step string, n int) error

func buildStep(step string, n int) error {
	if buildHook == nil {
		return nil
	}
	return buildHook(step, n)
}

// A syncer makes a snapshot's files and directories durable together rather than
// one after another. Each is written, its write-back started (sync_file_range
// SYNC_FILE_RANGE_WRITE, which does not wait) and its descriptor kept; flush then
// fsyncs them all, concurrently. Every file and directory is still fsynced before the
// snapshot is renamed into place, but what they share is committed once: on a
// journalled ext4 the first fsync commits the transaction that holds every creation
// and the others find it committed, where a fsync right after each write committed
// one transaction per file (a build of the default view's /etc with /etc/ssl,
// /etc/alternatives and a JDK's /etc copied: about 175 cache flushes and 280 writes
// to the disk before, 30 to 60 flushes and 120 writes now).
//
// syncfs(2) would be one call, but it also waits for every other dirty file of the
// file system: after a build in the user's home wrote 100 MiB, 155 ms here against
// 6 ms for the fsync of a small new file. A launch must not wait for that.
//
// The descriptors are close-on-exec and never leave this package; at most
// maxPending are kept open, and then flushed early.
type syncer struct {
	fds    []int
	count  int // files and directories handed to it
	synced int // of them, fsynced
}

const maxPending = 256

// add takes fd (the syncer closes it) after its content was written.
func (s *syncer) add(fd int, file bool) error {
	if file {
		// Only a hint: flush's fsync waits for the data whether it started or not.
		_ = unix.SyncFileRange(fd, 0, 0, unix.SYNC_FILE_RANGE_WRITE)
	}
	s.fds = append(s.fds, fd)
	s.count++
	if len(s.fds) >= maxPending {
		return s.flush()
	}
	return nil
}

// flush fsyncs and closes every descriptor it holds, syncWorkers at a time: the
// block layer merges the cache flushes of concurrent fsyncs, which one after another
// each wait for their own. The first error is returned, and every descriptor is
// closed all the same.
func (s *syncer) flush() error {
	fds := s.fds
	s.fds = nil
	errs := make([]error, len(fds))
	next := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < min(syncWorkers, len(fds)); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				errs[i] = unix.Fsync(fds[i])
				unix.Close(fds[i])
			}
		}()
	}
	for i := range fds {
		next <- i
	}
	close(next)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return fmt.Errorf("syncing the snapshot: %w", err)
		}
	}
	s.synced += len(fds)
	return nil
}

// syncWorkers is how many fsyncs flush has in flight.
const syncWorkers = 16

// abandon closes every descriptor without syncing: the build failed.
func (s *syncer) abandon() {
	for _, fd := range s.fds {
		unix.Close(fd)
	}
	s.fds = nil
}

// withParent opens the directory holding name under fd, one component at a time and
// never following a link, and calls fn with it and name's last component.
func withParent(fd int, name string, fn func(pfd int, base string) error) error {
	dir, base := path.Split(name)
	pfd, err := unix.Dup(fd)
	if err != nil {
		return err
	}
	for _, c := range strings.Split(strings.TrimSuffix(dir, "/"), "/") {
		if c == "" {
			continue
		}
		next, err := unix.Openat(pfd, c, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		unix.Close(pfd)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		pfd = next
	}
	defer unix.Close(pfd)
	return fn(pfd, base)
}

// writeEntry creates base under pfd: e's Content, the content of e's source, or
// empty. The source is read from a descriptor whose stat matches the key's stamp
// before and after the read, so the content is the one the key names.
func writeEntry(pfd int, base string, e Entry, s stamp, sy *syncer) error {
	data := []byte(e.Content)
	if e.Source != "" && !s.missing {
		var err error
		if data, err = readAt(unix.AT_FDCWD, e.Source, e.Source, s); err != nil {
			return err
		}
	}
	if err := writeFile(pfd, base, data, 0o444, sy); err != nil {
		return fmt.Errorf("%s: %w", e.Name, err)
	}
	return nil
}

// writeFile creates base under pfd (never through a link, never over anything) with
// data and mode. With sy, the file is handed to it to be synced with the rest of the
// build; without, it is synced before writeFile returns.
func writeFile(pfd int, base string, data []byte, mode uint32, sy *syncer) error {
	fd, err := unix.Openat(pfd, base, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return err
	}
	err = writeAll(fd, data)
	if err == nil {
		err = unix.Fchmod(fd, mode)
	}
	if err != nil || sy == nil {
		if err == nil {
			err = unix.Fsync(fd)
		}
		unix.Close(fd)
		return err
	}
	if err := sy.add(fd, true); err != nil {
		return err
	}
	return buildStep("write", sy.count)
}

func writeAll(fd int, data []byte) error {
	for len(data) > 0 {
		n, err := unix.Write(fd, data)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		data = data[n:]
	}
	return nil
}

// readAt reads name under dirfd (src, for errors), from a descriptor whose stat is
// want before and after the read. name is followed when it is a link only from
// AT_FDCWD (the /etc files named by the view); in a tree it never is.
func readAt(dirfd int, name, src string, want stamp) ([]byte, error) {
	flags := unix.O_RDONLY | unix.O_CLOEXEC | unix.O_NONBLOCK | unix.O_NOCTTY
	if dirfd != unix.AT_FDCWD {
		flags |= unix.O_NOFOLLOW
	}
	fd, err := unix.Openat(dirfd, name, flags, 0)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", src, err)
	}
	f := os.NewFile(uintptr(fd), src)
	defer f.Close()
	same := func() bool {
		var st unix.Stat_t
		return unix.Fstat(fd, &st) == nil && stampOf(&st) == want
	}
	if !same() {
		return nil, fmt.Errorf("%s: %w", src, ErrChanged)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxFile+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", src, err)
	}
	if int64(len(data)) != want.size || !same() {
		return nil, fmt.Errorf("%s: %w", src, ErrChanged)
	}
	return data, nil
}

func sealDir(pfd int, base string, sy *syncer) error { return sealDirMode(pfd, base, 0o555, sy) }

// sealDirMode sets the directory base under pfd to mode (0555; 0000 for a directory
// the user cannot list or enter on the host) and hands it to sy to be synced.
func sealDirMode(pfd int, base string, mode uint32, sy *syncer) error {
	fd, err := unix.Openat(pfd, base, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	if err := unix.Fchmod(fd, mode); err != nil {
		unix.Close(fd)
		return err
	}
	return sy.add(fd, false)
}

func randomName() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
