package maskscan

import (
	"errors"
	"io/fs"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

const (
	chunk    = 32       // subdirectories stat'ed by one task
	maxQueue = 64       // queued tasks, each holding a descriptor; past it, tasks run inline
	bufSize  = 32 << 10 // getdents buffer per worker
)

// walk brings a tree up to date with the filesystem, top-down, on a few workers.
// Each node is written by one task at a time: the task reading it, then the task
// stat'ing it as a subdirectory of its parent; handing a node to a task goes
// through the queue's mutex.
type walk struct {
	m       *matcher
	start   int64 // ns; when the scan started, before any read
	restamp func(*stamp)
	root    string
	dirty   atomic.Bool // the tree differs from the cache it was loaded from
	failed  atomic.Bool // err is set: tasks release their descriptors and stop
	reads   atomic.Int64

	mu    sync.Mutex
	cond  sync.Cond
	queue []task
	busy  int   // tasks queued or running
	err   error // the first error
}

// task is a unit of work. With n set, it reads n through fd (a descriptor open for
// reading when readable, else an O_PATH one) and then visits n's subdirectories;
// st is n's stamp, taken on fd before the read. Without n, it visits kids,
// subdirectories of the directory open as parent.
type task struct {
	n        *node
	fd       int
	st       stamp
	readable bool
	parent   *sharedFD
	kids     []*node
}

// sharedFD is a directory descriptor shared by the tasks visiting its
// subdirectories; the last to finish closes it.
type sharedFD struct {
	fd   int
	refs atomic.Int32
}

func (s *sharedFD) release() {
	if s.refs.Add(-1) == 0 {
		unix.Close(s.fd)
	}
}

// run updates tree (nil for none) from the directory root and returns it.
func (w *walk) run(root string, tree *node, workers int) (*node, error) {
	w.root, w.cond.L = root, &w.mu
	if tree == nil {
		tree = &node{}
	}
	fd, err := openat(unix.AT_FDCWD, root, unix.O_RDONLY|unix.O_DIRECTORY)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: root, Err: err}
	}
	buf := heapBuf()
	st, _, err := w.fstat(fd)
	if err == nil && !w.fresh(tree, st) {
		err = w.read(tree, fd, st, buf)
	}
	if err != nil {
		unix.Close(fd)
		return nil, &fs.PathError{Op: "read", Path: root, Err: err}
	}
	w.visit(tree, fd, buf)
	// The caller is one of the workers, with its buffer; the others allocate theirs
	// only when they get a task (a small or cached tree needs none).
	var wg sync.WaitGroup
	for range workers - 1 {
		wg.Go(func() { w.work(nil) })
	}
	w.work(buf)
	wg.Wait()
	if w.err != nil {
		return nil, w.err
	}
	return tree, nil
}

// heapBuf returns a getdents buffer on the heap, where only the pages the kernel
// writes are touched. A constant-size local buffer would be part of the caller's
// stack frame instead: the caller of Scan (devsandbox's main goroutine) would grow its
// stack to 64 KiB for it, copying it at each doubling, tens of fresh pages on every
// launch.
//
//go:noinline
func heapBuf() []byte { return make([]byte, bufSize) }

// work runs queued tasks until there are none and none running; buf is nil until
// the first task needs one.
func (w *walk) work(buf []byte) {
	w.mu.Lock()
	for {
		for len(w.queue) == 0 && w.busy > 0 {
			w.cond.Wait()
		}
		if len(w.queue) == 0 {
			w.mu.Unlock()
			return
		}
		t := w.queue[len(w.queue)-1] // last in, first out: depth first, a short queue
		w.queue = w.queue[:len(w.queue)-1]
		w.mu.Unlock()
		if buf == nil {
			buf = heapBuf()
		}
		w.do(t, buf)
		w.mu.Lock()
		if w.busy--; w.busy == 0 {
			w.cond.Broadcast()
		}
	}
}

// push queues t, or runs it now when the queue is long: that bounds the
// descriptors held by queued tasks.
func (w *walk) push(t task, buf []byte) {
	w.mu.Lock()
	if len(w.queue) >= maxQueue {
		w.mu.Unlock()
		w.do(t, buf)
		return
	}
	w.queue = append(w.queue, t)
	w.busy++
	w.mu.Unlock()
	w.cond.Signal()
}

func (w *walk) fail(n *node, err error) {
	w.mu.Lock()
	if w.err == nil {
		w.err = &fs.PathError{Op: "scan", Path: w.root + "/" + n.path(), Err: err}
	}
	w.failed.Store(true)
	w.mu.Unlock()
}

func (w *walk) do(t task, buf []byte) {
	if t.n == nil {
		for _, k := range t.kids {
			if w.failed.Load() {
				break
			}
			w.check(t.parent.fd, k, buf)
		}
		t.parent.release()
		return
	}
	if w.failed.Load() {
		unix.Close(t.fd)
		return
	}
	if !t.readable {
		fd, err := openat(t.fd, ".", unix.O_RDONLY|unix.O_DIRECTORY)
		if errors.Is(err, unix.EACCES) && ownedByUs(t.fd) {
			// The sandbox runs as its owner and could chmod it open: a directory that
			// cannot be checked cannot be trusted to hold no masked file.
			unix.Close(t.fd)
			w.fail(t.n, ErrOwnUnreadable)
			return
		}
		if errors.Is(err, unix.EACCES) {
			// Searchable but not listable: look the literal mask names up.
			if err := w.probe(t.n, t.fd, t.st); err != nil {
				w.lost(t.n, err)
			}
			unix.Close(t.fd)
			return
		}
		unix.Close(t.fd)
		if err != nil {
			w.lost(t.n, err)
			return
		}
		t.fd = fd
	}
	if err := w.read(t.n, t.fd, t.st, buf); err != nil {
		unix.Close(t.fd)
		w.lost(t.n, err)
		return
	}
	w.visit(t.n, t.fd, buf)
}

// visit queues the check of n's subdirectories, to be done through fd, n's
// descriptor, which it takes over.
func (w *walk) visit(n *node, fd int, buf []byte) {
	if len(n.kids) == 0 {
		unix.Close(fd)
		return
	}
	p := &sharedFD{fd: fd}
	p.refs.Store(int32((len(n.kids) + chunk - 1) / chunk))
	for i := 0; i < len(n.kids); i += chunk {
		w.push(task{parent: p, kids: n.kids[i:min(i+chunk, len(n.kids))]}, buf)
	}
}

// check brings k, a subdirectory of the directory open as pfd, up to date: a
// cached leaf whose stamp did not change costs one fstatat; a directory with
// subdirectories is opened to visit them; a changed or new one is queued for
// reading.
func (w *walk) check(pfd int, k *node, buf []byte) {
	if k.ok && len(k.kids) == 0 {
		st, mode, err := w.fstatat(pfd, k.name)
		if err != nil || mode != unix.S_IFDIR {
			w.lost(k, err)
			return
		}
		if w.fresh(k, st) {
			return
		}
	}
	flags := unix.O_PATH
	if !k.ok {
		flags = unix.O_RDONLY // never read: open it for reading straight away
	}
	fd, err := openat(pfd, k.name, flags|unix.O_DIRECTORY|unix.O_NOFOLLOW)
	if errors.Is(err, unix.EACCES) && flags != unix.O_PATH {
		flags = unix.O_PATH // perhaps searchable: the read task probes it
		fd, err = openat(pfd, k.name, flags|unix.O_DIRECTORY|unix.O_NOFOLLOW)
	}
	if err != nil {
		w.lost(k, err)
		return
	}
	st, mode, err := w.fstat(fd)
	if err != nil || mode != unix.S_IFDIR {
		unix.Close(fd)
		w.lost(k, err)
		return
	}
	if w.fresh(k, st) {
		w.visit(k, fd, buf)
		return
	}
	w.push(task{n: k, fd: fd, st: st, readable: flags != unix.O_PATH}, buf)
}

// fresh reports whether the cache of n still holds for a directory stamped st.
func (w *walk) fresh(n *node, st stamp) bool {
	return n.ok && n.trusted && n.st == st
}

// lost forgets n, which could not be read because of err. Errors that mean the
// directory is gone or unreadable (in the sandbox too) are expected; any other
// fails the scan, as it could hide a masked entry.
func (w *walk) lost(n *node, err error) {
	if n.forget() {
		w.dirty.Store(true)
	}
	switch {
	case err == nil, errors.Is(err, unix.ENOENT), errors.Is(err, unix.ENOTDIR), errors.Is(err, unix.ELOOP),
		errors.Is(err, unix.EACCES), errors.Is(err, unix.EPERM):
		return
	}
	w.fail(n, err)
}

// ownedByUs reports whether the directory fd belongs to the effective user (who, not
// being root, is refused by its permissions yet could change them).
func ownedByUs(fd int) bool {
	var st unix.Stat_t
	return unix.Fstat(fd, &st) == nil && st.Uid == uint32(unix.Geteuid()) && unix.Geteuid() != 0
}
