package wire

import (
	"bytes"
	"io"
	"strings"
	"sync"
)

// Report reads the init's stderr on the host: it passes everything through to Out
// except the first marker, which it records. Safe for one writer and concurrent
// readers of the result.
type Report struct {
	Out io.Writer
	// OnAgentStream, when set, is called (once, in Write) when the init says
	// AgentStreamMarker before its first marker: the session's agent must be
	// served by the stream. Set it before the first Write.
	OnAgentStream func()

	mu      sync.Mutex
	pending []byte // bytes that may begin a marker
	done    bool   // a marker was seen; everything else passes through
	ready   bool
	failure string
	seen    chan struct{}

	oomMarker []byte // set by ExpectOOM
	tail      []byte // output held back: it may begin oomMarker
	oom       bool
}

// ExpectOOM makes the Report watch the output after the first marker for the init's
// out-of-memory report with nonce (OOMMarker), which it removes. Call it before the
// first Write.
func (r *Report) ExpectOOM(nonce string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.oomMarker = []byte(OOMMarker(nonce))
}

// OOM reports whether the init reported that the memory limit killed the command.
func (r *Report) OOM() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.oom
}

// afterReady passes the output on, removing the out-of-memory report when expected.
func (r *Report) afterReady(p []byte) error {
	if len(r.oomMarker) == 0 {
		return r.write(p)
	}
	buf := append(r.tail, p...)
	r.tail = nil
	if i := bytes.Index(buf, r.oomMarker); i >= 0 {
		r.oom = true
		buf = append(append([]byte(nil), buf[:i]...), buf[i+len(r.oomMarker):]...)
	}
	// Hold back the longest end of buf that begins the marker.
	keep := 0
	for k := min(len(buf), len(r.oomMarker)-1); k > 0; k-- {
		if bytes.HasPrefix(r.oomMarker, buf[len(buf)-k:]) {
			keep = k
			break
		}
	}
	r.tail = append([]byte(nil), buf[len(buf)-keep:]...)
	return r.write(buf[:len(buf)-keep])
}

// NewReport returns a Report writing to out.
func NewReport(out io.Writer) *Report { return &Report{Out: out, seen: make(chan struct{})} }

// Seen is closed once a marker was read.
func (r *Report) Seen() <-chan struct{} { return r.seen }

// Result returns whether the init reported ready, or its failure reason.
func (r *Report) Result() (ready bool, failure string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ready, r.failure
}

const markerStart = "\x1b_devsandbox:"

// Write implements io.Writer.
func (r *Report) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.done {
		return len(p), r.afterReady(p)
	}
	buf := append(r.pending, p...)
	r.pending = nil
	for len(buf) > 0 && !r.done {
		i := bytes.IndexByte(buf, 0x1b)
		if i < 0 {
			if err := r.write(buf); err != nil {
				return len(p), err
			}
			return len(p), nil
		}
		if err := r.write(buf[:i]); err != nil {
			return len(p), err
		}
		buf = buf[i:]
		n := min(len(buf), len(markerStart))
		if string(buf[:n]) != markerStart[:n] {
			// An escape that is not ours.
			if err := r.write(buf[:1]); err != nil {
				return len(p), err
			}
			buf = buf[1:]
			continue
		}
		end := bytes.Index(buf[min(len(buf), 2):], []byte(MarkerEnd))
		if n < len(markerStart) || end < 0 {
			if len(buf) > 4096 {
				// Far too long for a marker: not one.
				if err := r.write(buf); err != nil {
					return len(p), err
				}
				return len(p), nil
			}
			r.pending = append([]byte(nil), buf...)
			return len(p), nil
		}
		end += 2
		m := string(buf[:end+len(MarkerEnd)])
		buf = buf[end+len(MarkerEnd):]
		switch {
		case m == ReadyMarker:
			r.ready = true
		case strings.HasPrefix(m, FailPrefix):
			r.failure = strings.TrimSuffix(strings.TrimPrefix(m, FailPrefix), MarkerEnd)
		case m == AgentStreamMarker:
			if f := r.OnAgentStream; f != nil {
				r.OnAgentStream = nil
				f()
			}
			continue
		default:
			continue // an unknown marker of ours: dropped
		}
		r.done = true
		close(r.seen)
	}
	if len(buf) > 0 {
		if r.done {
			return len(p), r.afterReady(buf)
		}
		return len(p), r.write(buf)
	}
	return len(p), nil
}

// Flush passes on bytes held back as a possible marker start (at end of stream).
func (r *Report) Flush() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	b := append(r.pending, r.tail...)
	r.pending, r.tail = nil, nil
	return r.write(b)
}

func (r *Report) write(b []byte) error {
	if len(b) == 0 || r.Out == nil {
		return nil
	}
	_, err := r.Out.Write(b)
	return err
}
