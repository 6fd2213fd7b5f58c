package tty

import (
	"io"
	"sync"
)

// Writer passes what is written to it through a Filter to w: for a command's
// output that reaches the user's terminal without being relayed (stdin not a
// terminal), where no screen guard follows it. Safe for concurrent use.
type Writer struct {
	mu  sync.Mutex
	w   io.Writer
	f   *Filter
	buf []byte
}

// NewWriter returns a Writer to w, a terminal, filtering with opts.
func NewWriter(w io.Writer, opts FilterOptions) *Writer {
	return &Writer{w: w, f: NewFilter(opts)}
}

// Write filters p and writes what is left. It reports all of p written when what
// is left was.
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = w.f.Append(w.buf[:0], p)
	if len(w.buf) == 0 {
		return len(p), nil
	}
	if _, err := w.w.Write(w.buf); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush ends a string the output left open (Filter.Flush), at the end of the
// output.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.buf = w.f.Flush(w.buf[:0]); len(w.buf) == 0 {
		return nil
	}
	_, err := w.w.Write(w.buf)
	return err
}
