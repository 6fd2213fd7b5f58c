package proxy

import (
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// ErrEncoding is wrapped by the error for a credential host's response whose body is
// content-encoded in a way the proxy cannot decode, so cannot search for an echoed
// credential: it is refused (502), never passed unsearched.
var ErrEncoding = errors.New("response encoding the proxy cannot search")

// redactBody makes resp's body mask the values of a's credentials, in each of their
// forms (credential.forms), and its trailers once the body has ended. The proxy asks
// credential hosts for an unencoded body (see askIdentity); a gzip or deflate body is
// decoded and passed decoded, without Content-Encoding; any other encoding (br, zstd, an
// unknown or bogus name) is refused with ErrEncoding. Masks are as long as the values,
// so Content-Length holds for an unencoded body.
func (a *applied) redactBody(resp *http.Response) error {
	if resp.Body == nil || resp.Body == http.NoBody || !a.hasValues() {
		return nil
	}
	r := &redactReader{src: resp.Body}
	if ces := resp.Header.Values("Content-Encoding"); len(ces) > 0 {
		body, err := decoded(resp.Body, ces)
		if err != nil {
			return err
		}
		r.src = body
		resp.Header.Del("Content-Encoding")
		resp.Header.Del("Content-Length")
		resp.ContentLength = -1
		resp.Uncompressed = true
	}
	for _, c := range a.creds {
		for _, f := range c.forms() {
			r.from = append(r.from, f.from)
			r.to = append(r.to, f.to)
			r.keep = max(r.keep, len(f.from)-1)
		}
	}
	// A streamed body (server-sent events) is read as it comes: only a tail that could
	// begin a form waits for more, not the last bytes of every event until the next.
	r.hold = func(buf []byte, _ int) int { return prefixTail(buf, r.from) }
	// Trailers arrive with the end of the body: masked then, before anyone reads them.
	r.atEOF = func() { a.redactHeader(resp.Trailer) }
	resp.Body = r
	return nil
}

// decoded returns body decoded from the Content-Encoding values ces (applied in
// order, so decoded in reverse); identity is no encoding.
func decoded(body io.ReadCloser, ces []string) (io.ReadCloser, error) {
	var names []string
	for _, v := range ces {
		for _, n := range strings.Split(v, ",") {
			if n = strings.ToLower(strings.TrimSpace(n)); n != "" && n != "identity" {
				names = append(names, n)
			}
		}
	}
	rc := body
	for i := len(names) - 1; i >= 0; i-- {
		var r io.Reader
		var err error
		switch names[i] {
		case "gzip", "x-gzip":
			r, err = gzip.NewReader(rc)
		case "deflate":
			r, err = zlib.NewReader(rc)
		default:
			return nil, fmt.Errorf("%w: Content-Encoding %s", ErrEncoding, strings.Join(ces, ", "))
		}
		if err != nil {
			return nil, fmt.Errorf("%w: Content-Encoding %s: %w", ErrEncoding, strings.Join(ces, ", "), err)
		}
		rc = struct {
			io.Reader
			io.Closer
		}{r, body}
	}
	return rc, nil
}

// askIdentity makes a request that carries credentials ask for an unencoded, whole
// response, the one the proxy can search for an echoed credential: no content coding
// to undo (nor a WebSocket extension: permessage-deflate), and no byte range, with which the sandbox could read an echo back a few
// bytes at a time, no piece holding what the masking looks for. A server answers a
// request without Range with the whole body; a client resuming a download through a
// credential's host starts it again (curl -C gives up).
func (a *applied) askIdentity(req *http.Request) {
	if a != nil && a.hasValues() {
		req.Header.Set("Accept-Encoding", "identity")
		req.Header.Del("Range")
		req.Header.Del("If-Range")
		req.Header.Del("Sec-WebSocket-Extensions") // permessage-deflate compresses an echo
	}
}

// redactReader replaces each of from with the same-length to in what it reads from
// src. It holds back the last keep bytes it has read (or what hold says) until more
// arrive, so a value split across reads is still found.
type redactReader struct {
	src      io.ReadCloser
	from, to [][]byte
	keep     int
	buf      []byte // buf[off:off+ready] is final; the rest of buf[off:] is held back
	off      int
	ready    int
	err      error  // from src, returned once buf is drained
	atEOF    func() // called once src has ended, before its end is returned
	// hold, when set, says how many of buf's last bytes to hold back instead of keep;
	// fresh of them were just read. An upgraded connection holds only a tail that
	// could begin a form (see applied.upgraded).
	hold func(buf []byte, fresh int) int
}

func (r *redactReader) Read(p []byte) (int, error) {
	for r.ready == 0 && r.err == nil {
		if r.buf == nil {
			r.buf = make([]byte, 0, 64<<10+r.keep)
		}
		r.buf = r.buf[:copy(r.buf, r.buf[r.off:])] // the held-back bytes move to the front
		r.off = 0
		n, err := r.src.Read(r.buf[len(r.buf):cap(r.buf)])
		r.buf = r.buf[:len(r.buf)+n]
		r.err = err
		for i, f := range r.from {
			replaceSameLength(r.buf, f, r.to[i])
		}
		if r.hold != nil {
			r.ready = len(r.buf) - r.hold(r.buf, n)
		} else {
			r.ready = max(len(r.buf)-r.keep, 0)
		}
		if r.err != nil {
			r.ready = len(r.buf)
			if r.atEOF != nil {
				r.atEOF()
				r.atEOF = nil
			}
		}
	}
	n := copy(p, r.buf[r.off:r.off+r.ready])
	r.off += n
	r.ready -= n
	if r.ready == 0 && r.off == len(r.buf) && r.err != nil {
		return n, r.err
	}
	return n, nil
}

func (r *redactReader) Close() error { return r.src.Close() }

// replaceSameLength overwrites every occurrence of from in b with to (len(to) ==
// len(from)).
func replaceSameLength(b, from, to []byte) {
	for i := 0; ; {
		j := bytes.Index(b[i:], from)
		if j < 0 {
			return
		}
		copy(b[i+j:], to)
		i += j + len(from)
	}
}

// hasValues reports whether a added any credential value to the request.
func (a *applied) hasValues() bool {
	for _, c := range a.creds {
		if c.Value != "" {
			return true
		}
	}
	return false
}
