package audit

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Writer defaults.
const (
	// DefaultDeniedBudget is how many records that are not allowed (denied, or no
	// decision reached) a session writes in full. Beyond it, a record is still written
	// when it is the first for its destination and rule, up to as many again; the rest
	// are counted in KindDropped records.
	DefaultDeniedBudget = 1000
	// DefaultRetention is the age (since its last write) at which a session's file is
	// removed, when a later Writer opens.
	DefaultRetention = 90 * 24 * time.Hour
	// markerInterval is how often, at most, a session that keeps dropping records
	// writes a KindDropped record; the last one is written by Close.
	markerInterval = 10 * time.Second
)

// Options tune a Writer; the zero value takes the defaults.
type Options struct {
	DeniedBudget int              // 0: DefaultDeniedBudget
	Retention    time.Duration    // 0: DefaultRetention
	Now          func() time.Time // nil: time.Now
}

// Writer appends one session's Records to a file of its own, dir/LogSubdir/<start
// time>-<session>.jsonl (mode 0600, in directories of mode 0700), or, made by
// NewStream, as lines to a stream. It never removes a record of its own session, nor
// a file another session is writing. Safe for concurrent use.
type Writer struct {
	mu      sync.Mutex
	out     io.Writer
	f       *os.File // the session's file; nil for a stream
	session string
	budget  int
	now     func() time.Time

	written    int              // records not allowed written so far
	seen       map[dropKey]bool // their destinations and rules
	pending    int              // records dropped since the last KindDropped record
	lastMarker time.Time
	closed     bool
	expired    chan struct{} // closed once the expired files are removed (nil: nothing to wait for)
}

// dropKey is what makes a record that is not allowed a new one: the first for its
// destination and rule is written even past the budget (Suggest needs it).
type dropKey struct {
	decision, rule, host string
	port                 int
}

// Open starts session's file in dir (created 0700 as needed) and removes the session
// files, and legacy log files, last written longer ago than the retention. The removal
// runs in the background, so that the proxy's first request does not wait for a scan
// of every past session's file; Close waits for it.
func Open(dir, session string, o Options) (*Writer, error) {
	if o.DeniedBudget == 0 {
		o.DeniedBudget = DefaultDeniedBudget
	}
	if o.Retention == 0 {
		o.Retention = DefaultRetention
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	sub := filepath.Join(dir, LogSubdir)
	if err := os.MkdirAll(sub, 0o700); err != nil {
		return nil, fmt.Errorf("creating the proxy log directory: %w", err)
	}
	start := o.Now().UTC()
	base := start.Format("20060102T150405.000Z") + "-" + fileSafe(session)
	var f *os.File
	var err error
	for i := 1; ; i++ {
		name := base
		if i > 1 {
			name += "-" + strconv.Itoa(i)
		}
		f, err = os.OpenFile(filepath.Join(sub, name+".jsonl"), os.O_WRONLY|os.O_APPEND|os.O_CREATE|os.O_EXCL, 0o600)
		if !errors.Is(err, fs.ErrExist) || i == 100 {
			break
		}
	}
	if err != nil {
		return nil, fmt.Errorf("opening the proxy log: %w", err)
	}
	// Held while the session writes: removeExpired skips a locked file, however long
	// its session has been quiet.
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("locking the proxy log: %w", err)
	}
	expired := make(chan struct{})
	go func() {
		defer close(expired)
		removeExpired(dir, start.Add(-o.Retention))
	}()
	return &Writer{out: f, f: f, session: session, budget: o.DeniedBudget, now: o.Now, seen: map[dropKey]bool{}, expired: expired}, nil
}

// NewStream is a Writer of session's records to out, one JSON line each, with the
// budget of o (its Retention is not used). Where the proxy runs away from the host
// (inside a docker engine), out is the stream the host's Relay reads. Close writes
// the last KindDropped record and does not close out.
func NewStream(out io.Writer, session string, o Options) *Writer {
	if o.DeniedBudget == 0 {
		o.DeniedBudget = DefaultDeniedBudget
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Writer{out: out, session: session, budget: o.DeniedBudget, now: o.Now, seen: map[dropKey]bool{}}
}

// fileSafe is session as a file name part: letters, digits, '-' and '_', at most 64.
func fileSafe(session string) string {
	s := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return '_'
	}, session)
	if len(s) > 64 {
		s = s[:64]
	}
	if s == "" {
		s = "session"
	}
	return s
}

// removeExpired removes the log files in dir last modified before cutoff, except one a
// Writer still holds.
func removeExpired(dir string, cutoff time.Time) {
	for _, name := range logFiles(dir) {
		fi, err := os.Lstat(name)
		if err != nil || !fi.Mode().IsRegular() || !fi.ModTime().Before(cutoff) {
			continue
		}
		f, err := os.Open(name)
		if err != nil {
			continue
		}
		if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil {
			_ = os.Remove(name)
		}
		f.Close()
	}
}

// Write appends rec as one line, bounded (see MaxRecordBytes), with Kind set
// (KindRequest when empty). A record that is not allowed counts against the
// session's budget: past it, it is dropped and counted, unless it is the first for its
// destination and rule (up to as many again). After Close it does nothing.
func (w *Writer) Write(rec Record) error {
	if rec.Kind == "" {
		rec.Kind = KindRequest
	}
	rec.bound()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil
	}
	if rec.Decision != DecisionAllow && rec.Kind != KindDropped && !w.admit(rec) {
		w.pending++
		if w.lastMarker.IsZero() || w.now().Sub(w.lastMarker) >= markerInterval {
			return w.marker()
		}
		return nil
	}
	return w.append(rec)
}

// admit reports whether a record that is not allowed is written, and counts it.
func (w *Writer) admit(rec Record) bool {
	k := dropKey{rec.Decision, rec.Rule, rec.Host, rec.Port}
	switch {
	case w.written < w.budget:
	case !w.seen[k] && len(w.seen) < 2*w.budget:
	default:
		return false
	}
	w.written++
	w.seen[k] = true
	return true
}

// marker writes a KindDropped record for the records dropped since the last one.
func (w *Writer) marker() error {
	now := w.now()
	rec := Record{Kind: KindDropped, Time: now.UTC(), Session: w.session, Decision: DecisionDeny, Dropped: w.pending}
	rec.bound()
	w.pending, w.lastMarker = 0, now
	return w.append(rec)
}

func (w *Writer) append(rec Record) error {
	_, err := w.out.Write(append(encode(rec), '\n'))
	return err
}

// Close writes the count of records dropped since the last KindDropped record, syncs
// and closes the file, once Open's removal of expired files is done; later writes are
// dropped. It may be called again.
func (w *Writer) Close() error {
	if w.expired != nil {
		<-w.expired
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil
	}
	w.closed = true
	var err error
	if w.pending > 0 {
		err = w.marker()
	}
	if w.f == nil {
		return err
	}
	return errors.Join(err, w.f.Sync(), w.f.Close())
}
