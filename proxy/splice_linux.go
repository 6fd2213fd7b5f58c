package proxy

import (
	"errors"
	"io"
	"net"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// spliceChunk is the most one splice(2) moves, and the pipe's size when the kernel
// grants it (fs.pipe-max-size is 1 MiB by default; a smaller pipe still works).
const spliceChunk = 1 << 20

// spliceRelay is relay without copying through user space: bytes move from src to a
// pipe and from the pipe to dst with splice(2), socket to socket in the kernel. It keeps
// relay's contract (idle deadlines, counting each chunk as it is written, half-close at
// EOF, closing both on an error). It reports false, having moved nothing, when src or
// dst is not a plain socket or the kernel cannot splice them; the caller then copies.
func spliceRelay(dst, src net.Conn, idle time.Duration, last, n *atomic.Int64) bool {
	rs, ok := rawConn(src)
	if !ok {
		return false
	}
	ws, ok := rawConn(dst)
	if !ok {
		return false
	}
	p, err := newPipe()
	if err != nil {
		return false
	}
	defer unix.Close(p[0])
	defer unix.Close(p[1])
	writeDeadline := func() { _ = dst.SetWriteDeadline(time.Now().Add(idle)) }
	moved := false
	for {
		_ = src.SetReadDeadline(time.Now().Add(idle))
		nr, err := fill(p[1], rs, spliceChunk)
		if errors.Is(err, unix.EINVAL) && !moved {
			return false // this kind of socket cannot be spliced: nothing was read
		}
		if nr > 0 {
			moved = true
			last.Store(time.Now().UnixNano())
			if werr := pump(ws, p[0], nr, n, writeDeadline); werr != nil {
				src.Close()
				dst.Close()
				return true
			}
			continue
		}
		switch {
		case err == nil: // nr == 0: end of file
			closeWrite(dst)
			return true
		case isTimeout(err) && time.Since(time.Unix(0, last.Load())) < idle:
			// this direction is quiet but the other one is moving
		default:
			src.Close()
			dst.Close()
			return true
		}
	}
}

// fill moves up to limit bytes from the socket to the pipe, waiting for the socket
// as its read deadline lets it; 0 bytes and no error is the socket's end of file.
func fill(pipe int, rs syscall.RawConn, limit int) (int, error) {
	var nr int
	var serr error
	err := rs.Read(func(fd uintptr) bool {
		nr, serr = spliceNB(pipe, int(fd), limit)
		return serr != unix.EAGAIN
	})
	if err == nil {
		err = serr
	}
	return nr, err
}

// pump writes the inPipe bytes waiting in the pipe to the socket, counting them in n.
// Before each write it calls before, which sets the write deadline: a write that moves
// any byte is progress, and only a socket that takes nothing for the idle time fails.
func pump(ws syscall.RawConn, pipe, inPipe int, n *atomic.Int64, before func()) error {
	for inPipe > 0 {
		before()
		var nw int
		var serr error
		if err := ws.Write(func(fd uintptr) bool {
			nw, serr = spliceNB(int(fd), pipe, inPipe)
			return serr != unix.EAGAIN
		}); err != nil {
			return err
		}
		if serr != nil {
			return serr
		}
		inPipe -= nw
		n.Add(int64(nw))
	}
	return nil
}

// spliceNB moves up to limit bytes from in to out; it never waits (the sockets are
// non-blocking, the pipe end by SPLICE_F_NONBLOCK): it fails with EAGAIN instead. EINTR
// is retried.
//
// It is a raw system call: the runtime does not mark the thread as in a system call,
// so the scheduler never hands its processor to another thread while the kernel moves
// up to a MiB. The proxy runs one processor (GOMAXPROCS 1); with syscall.Syscall each
// long splice let sysmon take it, wake a second thread and wake this one back to get
// it, about 500 futex calls and a third of the context switches of a 256 MiB tunnel.
func spliceNB(out, in, limit int) (int, error) {
	for {
		n, _, e := unix.RawSyscall6(unix.SYS_SPLICE, uintptr(in), 0, uintptr(out), 0, uintptr(limit), unix.SPLICE_F_MOVE|unix.SPLICE_F_NONBLOCK)
		switch e {
		case 0:
			return int(n), nil
		case unix.EINTR:
		default:
			return 0, e
		}
	}
}

// newPipe is a non-blocking pipe of spliceChunk bytes when the kernel grants it.
func newPipe() ([2]int, error) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		return p, err
	}
	_, _ = unix.FcntlInt(uintptr(p[1]), unix.F_SETPIPE_SZ, spliceChunk)
	return p, nil
}

// rawConn is c's descriptor access when c is a TCP or stream Unix socket.
func rawConn(c net.Conn) (syscall.RawConn, bool) {
	switch c := c.(type) {
	case *net.TCPConn:
		rc, err := c.SyscallConn()
		return rc, err == nil
	case *net.UnixConn:
		if c.LocalAddr().Network() != "unix" {
			return nil, false
		}
		rc, err := c.SyscallConn()
		return rc, err == nil
	}
	return nil, false
}

// spliceBody moves the next *left bytes of up to the socket under dst through a pipe,
// in the kernel, decreasing *left by what it reads. Before each write to dst it calls
// before (which sets the write deadline), so each write has the idle time to move a
// byte, as a copied write has to complete. It returns the bytes written to dst; it reports false,
// having moved nothing, when dst is not a plain socket or the kernel cannot splice.
// The reads from up wait as long as its deadline lets them (the request's end sets it).
func spliceBody(dst syscall.Conn, up *net.TCPConn, left *int64, before func()) (int64, bool, error) {
	ws, err := dst.SyscallConn()
	if err != nil {
		return 0, false, nil
	}
	rs, err := up.SyscallConn()
	if err != nil {
		return 0, false, nil
	}
	p, err := newPipe()
	if err != nil {
		return 0, false, nil
	}
	defer unix.Close(p[0])
	defer unix.Close(p[1])
	var n atomic.Int64
	for *left > 0 {
		nr, err := fill(p[1], rs, int(min(*left, spliceChunk)))
		switch {
		case errors.Is(err, unix.EINVAL) && n.Load() == 0 && nr == 0:
			return 0, false, nil // this kind of socket cannot be spliced: nothing was read
		case err != nil:
			return n.Load(), true, err
		case nr == 0:
			return n.Load(), true, io.ErrUnexpectedEOF // up ended before the declared length
		}
		*left -= int64(nr)
		if err := pump(ws, p[0], nr, &n, before); err != nil {
			return n.Load(), true, err
		}
	}
	return n.Load(), true, nil
}
