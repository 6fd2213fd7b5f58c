package proxy

import (
	"errors"
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
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		return false
	}
	defer unix.Close(p[0])
	defer unix.Close(p[1])
	_, _ = unix.FcntlInt(uintptr(p[1]), unix.F_SETPIPE_SZ, spliceChunk)
	moved := false
	for {
		_ = src.SetReadDeadline(time.Now().Add(idle))
		var nr int
		var serr error
		err := rs.Read(func(fd uintptr) bool {
			nr, serr = spliceNB(p[1], int(fd))
			return serr != unix.EAGAIN
		})
		if err == nil {
			err = serr
		}
		if errors.Is(err, unix.EINVAL) && !moved {
			return false // this kind of socket cannot be spliced: nothing was read
		}
		if nr > 0 {
			moved = true
			last.Store(time.Now().UnixNano())
			_ = dst.SetWriteDeadline(time.Now().Add(idle))
			if werr := pump(ws, p[0], nr, n); werr != nil {
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

// pump writes the inPipe bytes waiting in the pipe to the socket, counting them in n.
func pump(ws syscall.RawConn, pipe, inPipe int, n *atomic.Int64) error {
	for inPipe > 0 {
		var nw int
		var serr error
		if err := ws.Write(func(fd uintptr) bool {
			nw, serr = spliceNB(int(fd), pipe)
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

// spliceNB moves up to spliceChunk bytes from in to out without blocking on the pipe
// (the sockets are non-blocking already); EINTR is retried.
func spliceNB(out, in int) (int, error) {
	for {
		n, err := unix.Splice(in, nil, out, nil, spliceChunk, unix.SPLICE_F_MOVE|unix.SPLICE_F_NONBLOCK)
		if err != unix.EINTR {
			return int(n), err
		}
	}
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
