package proxy

import (
	"io"
	"net"
	"net/http"
	"syscall"
)

// relayBody moves the rest of a sized upstream body b to the client without copying
// it through user space where both ends are TCP sockets: it hands net/http's
// ReadFrom a bodySource, which writes the header, the first bytes (for net/http's
// sniffing) and then lets the source write the rest to the client socket itself
// (bodySource.WriteTo splices). Each write gets the idle time to complete, so a client
// that stops reading is cut off, and the audit count is exactly what the client socket
// took. It reports false, having written nothing, when b is not a sized body on a TCP
// connection or the client's writer has no ReadFrom.
func (w *responseWriter) relayBody(b *upBody) (int64, bool, error) {
	if b.rc != nil {
		return 0, false, nil
	}
	rf, ok := w.ResponseWriter.(io.ReaderFrom)
	if !ok {
		return 0, false, nil
	}
	up, ok := upstreamTCP(b.uc.conn)
	if !ok {
		return 0, false, nil
	}
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	w.refresh()
	src := &bodySource{w: w, b: b, up: up}
	n, err := rf.ReadFrom(src)
	w.count(n)
	if w.spliced != nil {
		w.spliced.Add(src.spliced)
	}
	if err == nil && b.left > 0 {
		err = io.ErrUnexpectedEOF
	}
	if err == nil {
		b.eof = true
	}
	return n, true, err
}

// bodySource is a sized upstream body as net/http's ReadFrom sees it. Read serves the
// first bytes it sniffs. net/http then asks the client socket to read from it; the
// socket cannot splice from anything but a socket, so it falls back to io.Copy, which
// hands WriteTo the socket (wrapped, with its SyscallConn): WriteTo writes what the
// upstream reader buffered and splices the rest. Given a writer that is not a
// socket, it copies, refreshing the write deadline before each write.
type bodySource struct {
	w       *responseWriter
	b       *upBody
	up      *net.TCPConn
	spliced int64
}

func (s *bodySource) Read(p []byte) (int, error) { return s.b.readSized(p) }

func (s *bodySource) WriteTo(dst io.Writer) (int64, error) {
	var n int64
	br := s.b.uc.br
	if k := min(int64(br.Buffered()), s.b.left); k > 0 {
		head, _ := br.Peek(int(k))
		s.w.refresh()
		nw, err := dst.Write(head)
		_, _ = br.Discard(nw)
		s.b.left -= int64(nw)
		n += int64(nw)
		if err != nil {
			return n, err
		}
	}
	if sc, ok := dst.(syscall.Conn); ok {
		m, ok, err := spliceBody(sc, s.up, &s.b.left, s.w.refresh)
		s.spliced += m
		if ok {
			return n + m, err
		}
	}
	bp := copyBufs.Get().(*[]byte)
	defer copyBufs.Put(bp)
	for s.b.left > 0 {
		nr, err := s.b.readSized(*bp)
		if nr > 0 {
			s.w.refresh()
			nw, werr := dst.Write((*bp)[:nr])
			n += int64(nw)
			if werr != nil {
				return n, werr
			}
		}
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// upstreamTCP is the TCP socket under an upstream connection.
func upstreamTCP(c net.Conn) (*net.TCPConn, bool) {
	if cc, ok := c.(*checkedConn); ok {
		if cc.ra.r < cc.ra.w {
			return nil, false // bytes read ahead come first
		}
		c = cc.Conn
	}
	tc, ok := c.(*net.TCPConn)
	return tc, ok
}
