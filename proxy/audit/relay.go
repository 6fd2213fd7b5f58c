package audit

import (
	"bufio"
	"errors"
	"fmt"
	"io"
)

// ErrRelayed is the class of the errors Relay returns for what the stream held: a
// line that is not a record, or a record of another session.
var ErrRelayed = errors.New("audit stream")

// relayLineBytes bounds a line of the stream Relay reads: a record NewStream writes
// is at most MaxRecordBytes, plus the newline.
const relayLineBytes = MaxRecordBytes + 1

// Relay writes to w the records r holds, one JSON line each as a NewStream Writer
// writes them, until r ends (nil) or fails. Each record is written as w.Write writes
// it, bounded and within w's budget; one that names another session than w's, a line
// that is not a record and a line longer than MaxRecordBytes are skipped, and Relay
// then returns an ErrRelayed error naming the first of them once r has ended, so
// that what a peer sent cannot stop the records after it.
func (w *Writer) Relay(r io.Reader) error {
	br := bufio.NewReaderSize(r, relayLineBytes)
	var bad error
	note := func(format string, a ...any) {
		if bad == nil {
			bad = fmt.Errorf("%w: "+format, append([]any{ErrRelayed}, a...)...)
		}
	}
	for {
		line, err := br.ReadSlice('\n')
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			note("a line longer than %d bytes", MaxRecordBytes)
			for errors.Is(err, bufio.ErrBufferFull) { // the rest of the line
				_, err = br.ReadSlice('\n')
			}
			if err == nil {
				continue
			}
		case err == nil || len(line) > 0 && errors.Is(err, io.EOF):
			rec, ok := parseRecord(line)
			switch {
			case !ok:
				note("not a record: %.80q", line)
			case rec.Session != w.session:
				note("a record of session %q in session %q's stream", rec.Session, w.session)
			default:
				if werr := w.Write(rec); werr != nil {
					return werr
				}
			}
		}
		if errors.Is(err, io.EOF) {
			return bad
		}
		if err != nil {
			return errors.Join(err, bad)
		}
	}
}
