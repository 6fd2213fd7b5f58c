package gitpush

import (
	"bytes"
	"fmt"
	"strings"
)

// ResultContentType is the content type of a receive-pack result.
const ResultContentType = "application/x-git-receive-pack-result"

// Side-band channels (git's sideband.c).
const (
	bandData     = 1
	bandProgress = 2 // git prints it as "remote: …"
	bandError    = 3 // git prints "remote error: …" and fails
)

// Refusal renders the receive-pack result that refuses every command of req, which
// reached no server. With report-status (or report-status-v2) each command is
// reported "ng <ref> <why(cmd)>" after "unpack ok", as receive-pack reports refs a
// hook declined; with a side band, messages go first on the progress band, one per
// line. git then prints each message as "remote: …" and each ref as "[remote
// rejected] … (why)", and exits non-zero. A client that asked for a side band but no
// report gets messages[0] on the error band as well, which fails the push.
//
// ok is false when the client asked for neither report-status nor a side band: no
// answer with status 200 would make git fail, so the caller answers with an HTTP error.
func Refusal(req *Request, messages []string, why func(Command) string) (body []byte, ok bool) {
	report := req.Has("report-status") || req.Has("report-status-v2")
	max := sideBand(req)
	if !report && max == 0 {
		return nil, false
	}
	var status bytes.Buffer
	if report {
		status.WriteString(pkt("unpack ok\n"))
		for _, c := range req.Commands {
			status.WriteString(pkt("ng " + c.Ref + " " + oneLine(why(c)) + "\n"))
		}
		status.WriteString("0000")
	}
	if max == 0 {
		return status.Bytes(), true
	}
	var b bytes.Buffer
	for _, m := range messages {
		writeBand(&b, bandProgress, []byte(oneLine(m)+"\n"), max)
	}
	if report {
		writeBand(&b, bandData, status.Bytes(), max)
	} else if len(messages) > 0 {
		writeBand(&b, bandError, []byte(oneLine(messages[0])+"\n"), max)
	}
	b.WriteString("0000")
	return b.Bytes(), true
}

// Fatal renders a receive-pack result that fails the whole request with message, for
// a request refused before its commands could be judged; req may hold only the
// capabilities read so far. ok is false unless the client asked for a side band:
// then the caller answers with an HTTP error instead.
func Fatal(req *Request, message string) (body []byte, ok bool) {
	max := 0
	if req != nil {
		max = sideBand(req)
	}
	if max == 0 {
		return nil, false
	}
	var b bytes.Buffer
	writeBand(&b, bandError, []byte(oneLine(message)+"\n"), max)
	b.WriteString("0000")
	return b.Bytes(), true
}

// sideBand is the largest packet of the side band the client asked for, 0 for none.
func sideBand(req *Request) int {
	switch {
	case req.Has("side-band-64k"):
		return MaxPacket
	case req.Has("side-band"):
		return 1000
	}
	return 0
}

// writeBand writes data on side-band channel n in packets of at most max bytes.
func writeBand(b *bytes.Buffer, n byte, data []byte, max int) {
	for len(data) > 0 {
		k := min(len(data), max-5)
		fmt.Fprintf(b, "%04x", k+5)
		b.WriteByte(n)
		b.Write(data[:k])
		data = data[k:]
	}
}

func pkt(s string) string { return fmt.Sprintf("%04x%s", len(s)+4, s) }

// oneLine keeps a message on one line of at most 1000 bytes: a report line and a
// side-band message end at their newline.
func oneLine(s string) string {
	s = strings.Map(func(r rune) rune {
		if r == '\n' || r == '\r' {
			return ' '
		}
		return r
	}, s)
	return cut(s, 1000)
}
