package proxy

import (
	"errors"
	"io"
)

// wsRedact masks credential forms (as redactReader does) in what a WebSocket host
// sends (RFC 6455, section 5.2), as the client will read it: in the payload of each
// message, joined across the frames the host cut it into, never in the raw bytes,
// where a frame header may sit between two halves of an echo. A client joins the
// fragments of a message into one (every library does), so a value split across
// frames would reach it whole; the host chooses where it cuts (gorilla/websocket
// cuts at its write buffer), and the sandbox can move the value to the cut by what it
// has the host reflect before it. A control frame (ping, pong, close) is masked in
// its own payload.
//
// The masks have the values' lengths, so every frame keeps its length and its
// header passes as sent. What is held back until more arrives is only a tail that
// could begin a form: of the message being sent, until its final frame has ended
// (the host has said, by a frame without FIN, that the message goes on), and of a
// control frame until it has ended. A message that has ended is passed whole at once,
// since the host may then wait for the client. When the host is gone, what was held
// back (the first bytes of a form, in a message that never ended) goes nowhere.
type wsRedact struct {
	src      io.ReadCloser
	from, to [][]byte

	raw   []byte // read from src, not yet returned: raw[off:off+ready] is final
	off   int
	ready int
	err   error

	// The frame being read: its header so far (head; whole once left is set or
	// the frame has ended), and how many payload bytes are still to come (left).
	head []byte
	left uint64
	// Payload bytes in raw, in order, each group one message's (data frames joined)
	// or one control frame's. msg is the group of the message being sent while inMsg
	// (from its first frame's header until its final frame has ended); ctl is the
	// group of the control frame being read.
	spans    []span
	groups   int
	inMsg    bool
	msg, ctl int
	view     []byte // scratch: a group's bytes joined
	// scratch for groupSpans
	byGroup   [][]int
	groupList [][]int
}

// errHeldOpen ends a WebSocket whose host keeps a message open (its tail held
// back) past a buffer's worth of control frames.
var errHeldOpen = errors.New("the WebSocket host kept a message open behind 64 KiB of control frames; the connection is closed")

// span is n payload bytes of group grp at raw[at:].
type span struct{ at, n, grp int }

func newWSRedact(src io.ReadCloser, from, to [][]byte) *wsRedact {
	return &wsRedact{src: src, from: from, to: to}
}

func (r *wsRedact) Read(p []byte) (int, error) {
	for r.ready == 0 && r.err == nil {
		r.compact()
		if r.raw == nil {
			r.raw = make([]byte, 0, 64<<10)
		}
		if len(r.raw) == cap(r.raw) {
			// Everything read is held behind a message's tail, which waits for the
			// message to go on while the host sends only control frames: the
			// connection ends rather than pass the tail or hold without bound.
			r.raw, r.err = r.raw[:0], errHeldOpen
			break
		}
		n, err := r.src.Read(r.raw[len(r.raw):cap(r.raw)])
		fresh := len(r.raw)
		r.raw = r.raw[:fresh+n]
		r.err = err
		r.parse(fresh)
		r.ready = len(r.raw)
		for _, g := range r.groupSpans() {
			r.ready = min(r.ready, r.mask(g))
		}
		if r.err != nil {
			r.raw = r.raw[:r.ready]
		}
	}
	n := copy(p, r.raw[r.off:r.off+r.ready])
	r.off += n
	r.ready -= n
	if r.ready == 0 && r.off == len(r.raw) && r.err != nil {
		return n, r.err
	}
	return n, nil
}

func (r *wsRedact) Close() error { return r.src.Close() }

// compact drops the bytes returned, moving what is held to the front of raw.
func (r *wsRedact) compact() {
	d := r.off
	if d == 0 {
		return
	}
	r.raw = r.raw[:copy(r.raw, r.raw[d:])]
	r.off = 0
	kept := r.spans[:0]
	for _, s := range r.spans {
		if end := s.at + s.n - d; end > 0 {
			at := max(s.at-d, 0)
			kept = append(kept, span{at, end - at, s.grp})
		}
	}
	r.spans = kept
}

// parse follows the frames through raw[from:], recording their payload bytes.
func (r *wsRedact) parse(from int) {
	for i := from; i < len(r.raw); {
		if r.left > 0 {
			k := int(min(r.left, uint64(len(r.raw)-i)))
			g := r.msg
			if r.control() {
				g = r.ctl
			}
			r.addSpan(i, k, g)
			r.left -= uint64(k)
			i += k
			if r.left == 0 {
				r.frameEnd()
			}
			continue
		}
		r.head = append(r.head, r.raw[i])
		i++
		n, ok := wsPayloadLen(r.head)
		if !ok {
			continue
		}
		r.groups++
		if r.control() {
			r.ctl = r.groups
		} else if !r.inMsg {
			r.inMsg, r.msg = true, r.groups
		}
		r.left = n
		if n == 0 {
			r.frameEnd()
		}
	}
}

// frameEnd ends the frame being read: a data frame with FIN ends its message.
func (r *wsRedact) frameEnd() {
	if !r.control() && r.head[0]&0x80 != 0 {
		r.inMsg = false
	}
	r.head = r.head[:0]
}

func (r *wsRedact) addSpan(at, n, grp int) {
	if k := len(r.spans); k > 0 && r.spans[k-1].grp == grp && r.spans[k-1].at+r.spans[k-1].n == at {
		r.spans[k-1].n += n
		return
	}
	r.spans = append(r.spans, span{at, n, grp})
}

// control reports whether the frame being read is a control frame (opcode 8 and up).
func (r *wsRedact) control() bool { return len(r.head) > 0 && r.head[0]&0x08 != 0 }

// groupSpans lists, for each group with payload bytes in raw, the indices of its
// spans, in order. Groups are numbered in the order their frames began, so the
// groups in raw are a range of numbers.
func (r *wsRedact) groupSpans() [][]int {
	if len(r.spans) == 0 {
		return nil
	}
	lo, hi := r.spans[0].grp, r.spans[0].grp
	for _, s := range r.spans {
		lo, hi = min(lo, s.grp), max(hi, s.grp)
	}
	if cap(r.byGroup) < hi-lo+1 {
		r.byGroup = make([][]int, hi-lo+1)
	}
	by := r.byGroup[:hi-lo+1]
	for i := range by {
		by[i] = by[i][:0]
	}
	for i, s := range r.spans {
		by[s.grp-lo] = append(by[s.grp-lo], i)
	}
	gs := r.groupList[:0]
	for _, idx := range by {
		if len(idx) > 0 {
			gs = append(gs, idx)
		}
	}
	r.groupList = gs
	return gs
}

// mask replaces every form in a group's payload bytes (the spans idx), joined, and
// writes them back. It returns how many bytes of raw are final as far as the group
// is concerned: all of them for a group that has ended, else up to its tail that
// could begin a form.
func (r *wsRedact) mask(idx []int) int {
	r.view = r.view[:0]
	for _, i := range idx {
		s := r.spans[i]
		r.view = append(r.view, r.raw[s.at:s.at+s.n]...)
	}
	for i, f := range r.from {
		replaceSameLength(r.view, f, r.to[i])
	}
	v := r.view
	for _, i := range idx {
		s := r.spans[i]
		copy(r.raw[s.at:s.at+s.n], v[:s.n])
		v = v[s.n:]
	}
	g := r.spans[idx[0]].grp
	goesOn := r.inMsg && g == r.msg || r.control() && g == r.ctl
	if !goesOn {
		return len(r.raw)
	}
	hold := prefixTail(r.view, r.from)
	if hold == 0 {
		return len(r.raw)
	}
	k := len(r.view) - hold // the first byte held, in the group's bytes
	for _, i := range idx {
		s := r.spans[i]
		if k < s.n {
			return s.at + k
		}
		k -= s.n
	}
	return len(r.raw)
}

// wsPayloadLen is the payload length of the frame whose header is h, once h is whole
// (a mask key included: only clients mask, a host's is taken as sent).
func wsPayloadLen(h []byte) (uint64, bool) {
	if len(h) < 2 {
		return 0, false
	}
	size := 2
	switch h[1] & 0x7f {
	case 126:
		size += 2
	case 127:
		size += 8
	}
	if h[1]&0x80 != 0 {
		size += 4
	}
	if len(h) < size {
		return 0, false
	}
	switch n := uint64(h[1] & 0x7f); n {
	case 126:
		return uint64(h[2])<<8 | uint64(h[3]), true
	case 127:
		var v uint64
		for _, b := range h[2:10] {
			v = v<<8 | uint64(b)
		}
		return v, true
	default:
		return n, true
	}
}
