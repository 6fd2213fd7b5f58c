package gitpush

import (
	"errors"
	"fmt"
	"io"
)

// MaxPacket is the largest pkt-line git reads or writes (LARGE_PACKET_MAX): four
// length digits and up to 65516 bytes of payload.
const MaxPacket = 65520

// Classes of the errors ReadRequest returns; every one means the request must not be
// forwarded.
var (
	// ErrMalformed: the body is not a receive-pack command list (a bad length, a
	// packet git does not send there, a command that does not parse, a bad ref name).
	ErrMalformed = errors.New("malformed receive-pack request")
	// ErrTruncated: the body ended before the command list did.
	ErrTruncated = errors.New("the receive-pack request ends inside its command list")
	// ErrTooLarge: the command list is longer than the reader's bound.
	ErrTooLarge = errors.New("the receive-pack command list is too large")
	// ErrUnsupported: a form of push the reader does not judge (a signed push).
	ErrUnsupported = errors.New("unsupported receive-pack request")
)

// packetKind is what one pkt-line is.
type packetKind int

const (
	packetData  packetKind = iota
	packetFlush            // "0000"
)

// pktReader reads pkt-lines from r exactly, never past the packet asked for, and
// keeps every byte it read (head) so that a caller can send them on unchanged. It
// reads at most max bytes in all.
type pktReader struct {
	r    io.Reader
	head []byte
	max  int
}

// next reads one pkt-line: a flush, or data with its payload (a slice of head, valid
// until the next call). The special packets of protocol v2 (delim "0001",
// response-end "0002") and the lengths 3 and 4, which carry nothing, are not sent in a
// receive-pack request: they are ErrMalformed, as is a length over MaxPacket.
func (p *pktReader) next() (packetKind, []byte, error) {
	start := len(p.head)
	digits, err := p.read(4)
	if err != nil {
		return 0, nil, err
	}
	n := 0
	for _, c := range digits {
		v, ok := hexValue(c)
		if !ok {
			return 0, nil, fmt.Errorf("%w: pkt-line length %q is not four hex digits", ErrMalformed, digits)
		}
		n = n<<4 | v
	}
	switch {
	case n == 0:
		return packetFlush, nil, nil
	case n <= 4:
		return 0, nil, fmt.Errorf("%w: pkt-line length %q", ErrMalformed, digits)
	case n > MaxPacket:
		return 0, nil, fmt.Errorf("%w: pkt-line length %d is over %d", ErrMalformed, n, MaxPacket)
	}
	if _, err := p.read(n - 4); err != nil {
		return 0, nil, err
	}
	return packetData, p.head[start+4:], nil
}

// read appends exactly n more bytes of r to head and returns them.
func (p *pktReader) read(n int) ([]byte, error) {
	if len(p.head)+n > p.max {
		return nil, fmt.Errorf("%w: more than %d bytes", ErrTooLarge, p.max)
	}
	start := len(p.head)
	p.head = append(p.head, make([]byte, n)...)
	got, err := io.ReadFull(p.r, p.head[start:])
	p.head = p.head[:start+got]
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return nil, ErrTruncated
	case err != nil:
		return nil, fmt.Errorf("reading the receive-pack request: %w", err)
	}
	return p.head[start:], nil
}

// hexValue is git's hexval: both cases are digits.
func hexValue(c byte) (int, bool) {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0'), true
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10, true
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10, true
	}
	return 0, false
}
