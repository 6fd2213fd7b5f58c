package proxy

import (
	"bytes"
	"io"
	"net/http"
)

// redactBody makes resp's body mask the values of a's credentials, when the body is
// not content-encoded (a compressed body cannot be searched without decoding it, and
// is passed as it is). Masks are as long as the values, so Content-Length holds.
func (a *applied) redactBody(resp *http.Response) {
	if resp.Body == nil || resp.Body == http.NoBody {
		return
	}
	if ce := resp.Header.Get("Content-Encoding"); ce != "" && ce != "identity" {
		return
	}
	r := &redactReader{src: resp.Body}
	for _, c := range a.creds {
		if c.Value != "" {
			r.from = append(r.from, []byte(c.Value))
			r.to = append(r.to, []byte(c.mask()))
			r.keep = max(r.keep, len(c.Value)-1)
		}
	}
	if len(r.from) > 0 {
		resp.Body = r
	}
}

// redactReader replaces each of from with the same-length to in what it reads from
// src. It holds back the last keep bytes it has read until more arrive, so a value
// split across reads is still found.
type redactReader struct {
	src      io.ReadCloser
	from, to [][]byte
	keep     int
	buf      []byte // buf[off:off+ready] is final; the rest of buf[off:] is held back
	off      int
	ready    int
	err      error // from src, returned once buf is drained
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
		r.ready = max(len(r.buf)-r.keep, 0)
		if r.err != nil {
			r.ready = len(r.buf)
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
