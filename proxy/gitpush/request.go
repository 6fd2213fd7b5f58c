// Package gitpush reads what a git push asks of a smart-HTTP server, and answers a
// refused push the way git's receive-pack answers one, so that git shows the reason.
//
// A push is a POST to …/git-receive-pack whose body starts with the command list:
// optional "shallow <id>" lines, then one pkt-line per ref update ("<old-id> <new-id>
// <ref>", the first followed by NUL and the capabilities the client asks for), then a
// flush-pkt; push options and the pack follow. ReadRequest reads exactly the command
// list and keeps the bytes it read, so a push that is allowed goes on unchanged: those
// bytes, then the rest of the body as it streams. It parses the list as receive-pack
// does (one trailing newline chomped, capabilities after NUL on any line, ids of the
// length of the first one, 40 or 64 hex digits), and refuses what receive-pack would
// die on or what it would not judge the same way: a bad pkt-line, a command that does
// not parse, a ref name git would refuse, an "ERR" packet, a signed push (push-cert),
// a body that ends early, a list longer than its bound.
//
// Result renders a receive-pack result: the report-status of every command ("ng" with
// a reason), and messages on the side band's progress channel, which git prints as
// "remote: …".
//
// Everything here is pure and reads only the io.Reader it is given.
package gitpush

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/devsandbox/devsandbox/egress"
)

// Command is one ref update of a push. Old is all zeros for a ref the push creates,
// New for one it deletes.
type Command struct {
	Old, New string // lower-case hex object ids, 40 (SHA-1) or 64 (SHA-256) digits
	Ref      string // the full ref name, checked by egress.CheckRefName
}

// Create reports whether the command creates its ref.
func (c Command) Create() bool { return zeroID(c.Old) }

// Delete reports whether the command deletes its ref.
func (c Command) Delete() bool { return zeroID(c.New) }

func zeroID(id string) bool { return strings.Trim(id, "0") == "" }

// Request is the command list of a receive-pack request.
type Request struct {
	Commands []Command
	// Caps are the capabilities the client asked for, in order, from every line that
	// carries some (git sends them on the first).
	Caps []string
}

// Has reports whether the client asked for capability name (a "name=value" one
// matches its name).
func (r *Request) Has(name string) bool {
	return slices.ContainsFunc(r.Caps, func(c string) bool {
		k, _, _ := strings.Cut(c, "=")
		return k == name
	})
}

// ReadRequest reads the command list at the head of a receive-pack request body from
// body, reading nothing past its closing flush-pkt and at most max bytes. It returns
// the list and every byte it read, also when it fails: then the list holds what was
// read before the failure (its capabilities let Fatal answer). An error matches one
// of ErrMalformed, ErrTruncated, ErrTooLarge and ErrUnsupported, or wraps body's own.
func ReadRequest(body io.Reader, max int) (*Request, []byte, error) {
	p := &pktReader{r: body, max: max}
	req, err := p.commands()
	return req, p.head, err
}

func (p *pktReader) commands() (*Request, error) {
	req := &Request{}
	idLen := 0
	for {
		kind, payload, err := p.next()
		if err != nil {
			return req, err
		}
		if kind == packetFlush {
			return req, nil
		}
		if bytes.HasPrefix(payload, []byte("ERR ")) {
			return req, fmt.Errorf("%w: an ERR packet", ErrMalformed)
		}
		line := payload
		if line[len(line)-1] == '\n' {
			line = line[:len(line)-1] // receive-pack chomps one newline
		}
		if len(line) > 8 && bytes.HasPrefix(line, []byte("shallow ")) {
			if n := hexPrefix(line[8:]); n != 40 && n != 64 {
				return req, fmt.Errorf("%w: a shallow line without an object id", ErrMalformed)
			}
			continue
		}
		if i := bytes.IndexByte(line, 0); i >= 0 {
			req.Caps = append(req.Caps, strings.Fields(string(line[i+1:]))...)
			line = line[:i]
		}
		if string(line) == "push-cert" {
			return req, fmt.Errorf("%w: a signed push (push-cert), whose ref updates the proxy does not read: push without --signed", ErrUnsupported)
		}
		cmd, err := parseCommand(string(line), &idLen)
		if err != nil {
			return req, err
		}
		req.Commands = append(req.Commands, cmd)
	}
}

// parseCommand parses "<old> <new> <ref>". *idLen is the id length of the first
// command (0 before it): every id must have it.
func parseCommand(line string, idLen *int) (Command, error) {
	bad := func(why string) (Command, error) {
		return Command{}, fmt.Errorf("%w: %s in the command %q", ErrMalformed, why, cut(line, 200))
	}
	old, rest, ok1 := strings.Cut(line, " ")
	nw, ref, ok2 := strings.Cut(rest, " ")
	if !ok1 || !ok2 {
		return bad("not <old-id> <new-id> <ref>")
	}
	if *idLen == 0 {
		*idLen = len(old)
	}
	for _, id := range []string{old, nw} {
		if len(id) != *idLen || (*idLen != 40 && *idLen != 64) || hexPrefix([]byte(id)) != len(id) {
			return bad("an object id that is not 40 or 64 hex digits like the first")
		}
	}
	if err := egress.CheckRefName(ref); err != nil {
		return bad(fmt.Sprintf("a ref name git refuses (%v)", err))
	}
	return Command{Old: strings.ToLower(old), New: strings.ToLower(nw), Ref: ref}, nil
}

// hexPrefix is the number of hex digits b starts with.
func hexPrefix(b []byte) int {
	for i, c := range b {
		if _, ok := hexValue(c); !ok {
			return i
		}
	}
	return len(b)
}

// cut shortens s to at most n bytes for a message.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
