package wire

import (
	"bytes"
	"io"
	"slices"
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
	over    chan struct{} // closed by Flush: the output ended

	oomMarker []byte // set by ExpectOOM
	endMarker []byte // set by ExpectEnd
	refPrefix []byte // set by ExpectRefusals
	onRefused func(Refusal)
	tail      []byte // output held back: it may begin a marker
	oom       bool
	awaits    []await // set by Await
	ended     bool
}

// await is an answer of the init a caller waits for (Await): the index of its
// marker among the Await's.
type await struct {
	marker []byte
	index  int
	ch     chan int
}

// Await makes the Report watch the output after the first marker for one of the
// init's answers, which it removes: the returned channel gets the index in answers
// of the first to arrive. The watch ends with it; Forget ends it before.
func (r *Report) Await(answers ...string) <-chan int {
	r.mu.Lock()
	defer r.mu.Unlock()
	ch := make(chan int, 1)
	for i, a := range answers {
		r.awaits = append(r.awaits, await{[]byte(a), i, ch})
	}
	return ch
}

// Forget stops watching for the answers of the Await that returned ch.
func (r *Report) Forget(ch <-chan int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.awaits = slices.DeleteFunc(r.awaits, func(a await) bool { return a.ch == ch })
}

// ExpectEnd makes the Report watch the output after the first marker for the session
// init's report, with nonce, that every process of its session is gone (EndMarker),
// which it removes. Call it before the first Write.
func (r *Report) ExpectEnd(nonce string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.endMarker = []byte(EndMarker(nonce))
}

// Ended reports whether the session init reported that every process of its session
// is gone (ExpectEnd).
func (r *Report) Ended() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ended
}

// ExpectOOM makes the Report watch the output after the first marker for the init's
// out-of-memory report with nonce (OOMMarker), which it removes. Call it before the
// first Write.
func (r *Report) ExpectOOM(nonce string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.oomMarker = []byte(OOMMarker(nonce))
}

// ExpectRefusals makes the Report watch the output after the first marker for the
// init's reports, with nonce, of connections the kept container's keeper refused
// (RefusedMarker), which it removes, calling f with each. Call it before the first
// Write; f runs in Write and must not call the Report.
func (r *Report) ExpectRefusals(nonce string, f func(Refusal)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.refPrefix, r.onRefused = []byte(refusedPrefix(nonce)), f
}

// OOM reports whether the init reported that the memory limit killed the command.
func (r *Report) OOM() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.oom
}

// Kinds of the init's reports after its first marker (nextReport).
const (
	reportOOM = iota
	reportEnd
	reportRefused
	reportAwait
)

// afterReady passes the output on, removing the init's reports it expects (the
// out-of-memory report, the session's end, refusals) and acting on them.
func (r *Report) afterReady(p []byte) error {
	if len(r.oomMarker) == 0 && len(r.endMarker) == 0 && len(r.refPrefix) == 0 && len(r.awaits) == 0 {
		return r.write(p)
	}
	buf := append(r.tail, p...)
	r.tail = nil
	var out []byte
	for {
		i, kind := r.nextReport(buf)
		if i < 0 {
			break
		}
		out = append(out, buf[:i]...)
		switch kind {
		case reportAwait:
			a := r.awaits[r.awaitAt(buf[i:])]
			a.ch <- a.index
			r.awaits = slices.DeleteFunc(r.awaits, func(b await) bool { return b.ch == a.ch })
			buf = buf[i+len(a.marker):]
			continue
		case reportOOM:
			r.oom = true
			buf = buf[i+len(r.oomMarker):]
			continue
		case reportEnd:
			r.ended = true
			buf = buf[i+len(r.endMarker):]
			continue
		}
		body := buf[i+len(r.refPrefix):]
		end := bytes.Index(body, []byte(MarkerEnd))
		if end < 0 && len(body) <= MaxRefusalBytes {
			// Its end has not arrived yet.
			r.tail = append([]byte(nil), buf[i:]...)
			return r.write(out)
		}
		if end < 0 || end > MaxRefusalBytes {
			// Far too long for a report: not one.
			out = append(out, buf[i])
			buf = buf[i+1:]
			continue
		}
		if rf, ok := ParseRefusal(body[:end]); ok && r.onRefused != nil {
			r.onRefused(rf)
		}
		buf = body[end+len(MarkerEnd):]
	}
	// Hold back the longest end of buf that begins a report.
	keep := max(partialAtEnd(buf, r.oomMarker), partialAtEnd(buf, r.endMarker), partialAtEnd(buf, r.refPrefix))
	for _, a := range r.awaits {
		keep = max(keep, partialAtEnd(buf, a.marker))
	}
	r.tail = append([]byte(nil), buf[len(buf)-keep:]...)
	return r.write(append(out, buf[:len(buf)-keep]...))
}

// nextReport finds the first expected report in buf: its index (-1: none) and its
// kind (reportOOM, reportEnd, reportRefused, reportAwait).
func (r *Report) nextReport(buf []byte) (int, int) {
	at, kind := -1, 0
	for k, m := range [...][]byte{reportOOM: r.oomMarker, reportEnd: r.endMarker, reportRefused: r.refPrefix} {
		if len(m) == 0 {
			continue
		}
		if i := bytes.Index(buf, m); i >= 0 && (at < 0 || i < at) {
			at, kind = i, k
		}
	}
	for _, a := range r.awaits {
		if i := bytes.Index(buf, a.marker); i >= 0 && (at < 0 || i < at) {
			at, kind = i, reportAwait
		}
	}
	return at, kind
}

// awaitAt is the index in r.awaits of the answer buf begins with, -1 when none.
func (r *Report) awaitAt(buf []byte) int {
	for k, a := range r.awaits {
		if bytes.HasPrefix(buf, a.marker) {
			return k
		}
	}
	return -1
}

// partialAtEnd is the length of the longest end of buf that begins marker (shorter
// than marker).
func partialAtEnd(buf, marker []byte) int {
	for k := min(len(buf), len(marker)-1); k > 0; k-- {
		if bytes.HasPrefix(marker, buf[len(buf)-k:]) {
			return k
		}
	}
	return 0
}

// NewReport returns a Report writing to out.
func NewReport(out io.Writer) *Report {
	return &Report{Out: out, seen: make(chan struct{}), over: make(chan struct{})}
}

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

// Over is closed once the output ended (Flush): the init exited, and an answer
// not received by then (Await) will not come.
func (r *Report) Over() <-chan struct{} { return r.over }

// Flush passes on bytes held back as a possible marker start; call it at the end of
// the stream, once: Over is closed then.
func (r *Report) Flush() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	b := append(r.pending, r.tail...)
	r.pending, r.tail = nil, nil
	err := r.write(b)
	select {
	case <-r.over:
	default:
		close(r.over)
	}
	return err
}

func (r *Report) write(b []byte) error {
	if len(b) == 0 || r.Out == nil {
		return nil
	}
	_, err := r.Out.Write(b)
	return err
}
