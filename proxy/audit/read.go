package audit

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// LogFilter selects Records; its zero value selects all.
type LogFilter struct {
	Denied  bool      // only denied requests
	Session string    // only this session
	Host    string    // only this host (exact, case-insensitive)
	Since   time.Time // only records at or after this time
}

// Match reports whether r passes the filter.
func (f LogFilter) Match(r Record) bool {
	return (!f.Denied || r.Decision == DecisionDeny) &&
		(f.Session == "" || r.Session == f.Session) &&
		(f.Host == "" || strings.EqualFold(r.Host, f.Host)) &&
		(f.Since.IsZero() || !r.Time.Before(f.Since))
}

// ReadLog returns the records of the audit log in dir that match filter, oldest first,
// across rotated files. A missing log is no records, not an error; a line that does not
// parse (one cut short by a crash) is skipped.
func ReadLog(dir string, filter LogFilter) ([]Record, error) {
	var out []Record
	for _, name := range logFiles(dir) {
		recs, err := readFile(name, filter)
		if err != nil {
			return nil, err
		}
		out = append(out, recs...)
	}
	return out, nil
}

// logFiles lists the log's files oldest first: the rotated ones, then the current one.
func logFiles(dir string) []string {
	path := filepath.Join(dir, LogFile)
	idx := rotatedIndexes(path)
	out := make([]string, 0, len(idx)+1)
	for i := len(idx) - 1; i >= 0; i-- {
		out = append(out, rotatedName(path, idx[i]))
	}
	return append(out, path)
}

func parseRecord(line []byte) (Record, bool) {
	var r Record
	if len(bytes.TrimSpace(line)) == 0 || json.Unmarshal(line, &r) != nil {
		return Record{}, false
	}
	return r, true
}

// followPoll is how often Follow looks for new lines.
const followPoll = 200 * time.Millisecond

// Follow calls fn with every record in the log in dir that matches filter: first those
// already written (as ReadLog), then new ones as they are appended, across rotations,
// until ctx is done (then it returns nil). The log need not exist yet. Records are lost
// only if a file is rotated out of existence between two polls.
func Follow(ctx context.Context, dir string, filter LogFilter, fn func(Record)) error {
	t := &tail{path: filepath.Join(dir, LogFile), filter: filter, fn: fn}
	defer t.close()
	t.start(logFiles(dir)[0]) // the oldest file; the tail walks forward from it
	tick := time.NewTicker(followPoll)
	defer tick.Stop()
	for {
		if err := t.poll(); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

func readFile(name string, filter LogFilter) ([]Record, error) {
	data, err := os.ReadFile(name)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("reading the proxy log: %w", err)
	}
	var out []Record
	for line := range bytes.SplitSeq(data, []byte("\n")) {
		if r, ok := parseRecord(line); ok && filter.Match(r) {
			out = append(out, r)
		}
	}
	return out, nil
}

// tail reads the lines appended to the log, walking from a rotated file to the one
// written after it, and finally following the current file.
type tail struct {
	path    string
	filter  LogFilter
	fn      func(Record)
	f       *os.File
	r       *bufio.Reader
	partial []byte
}

func (t *tail) start(name string) {
	if f, err := os.Open(name); err == nil {
		t.use(f)
	}
}

func (t *tail) use(f *os.File) {
	t.close()
	t.f, t.r, t.partial = f, bufio.NewReader(f), nil
}

func (t *tail) poll() error {
	if t.f == nil {
		f, err := os.Open(t.path)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("following the proxy log: %w", err)
		}
		t.use(f)
	}
	for {
		if err := t.drain(); err != nil {
			return err
		}
		next, err := t.successor()
		if err != nil || next == nil {
			return err
		}
		t.use(next)
	}
}

// successor opens the file written after t.f once t.f has been rotated, or returns nil
// while t.f is still the current file (or the next one is not there yet).
func (t *tail) successor() (*os.File, error) {
	fi, err := t.f.Stat()
	if err != nil {
		return nil, fmt.Errorf("following the proxy log: %w", err)
	}
	for {
		if cur, err := os.Stat(t.path); err == nil && os.SameFile(cur, fi) {
			return nil, nil
		}
		k := rotatedIndex(t.path, fi)
		if k == 0 { // rotated out of existence: carry on with the current file
			g, err := os.Open(t.path)
			if errors.Is(err, fs.ErrNotExist) {
				return nil, nil
			}
			return g, err
		}
		g, err := os.Open(rotatedName(t.path, k-1))
		switch {
		case errors.Is(err, fs.ErrNotExist) && k == 1:
			return nil, nil // mid-rotation: the new file is not created yet
		case errors.Is(err, fs.ErrNotExist):
			continue // mid-rotation: look again
		case err != nil:
			return nil, fmt.Errorf("following the proxy log: %w", err)
		}
		// Only if t.f is still at k did g follow it (no rotation in between).
		if ri, err := os.Stat(rotatedName(t.path, k)); err == nil && os.SameFile(ri, fi) {
			return g, nil
		}
		g.Close()
	}
}

// rotatedIndex is i where LogFile.i is the file fi, or 0 when no rotated file is.
func rotatedIndex(path string, fi os.FileInfo) int {
	for _, i := range rotatedIndexes(path) {
		if ri, err := os.Stat(rotatedName(path, i)); err == nil && os.SameFile(ri, fi) {
			return i
		}
	}
	return 0
}

// rotatedIndexes lists the rotated files' suffixes, 1 (newest) first. A rotation in
// progress leaves one gap in the sequence, so the scan stops at two missing in a row.
func rotatedIndexes(path string) []int {
	var out []int
	for i, missing := 1, 0; missing < 2; i++ {
		if _, err := os.Lstat(rotatedName(path, i)); err != nil {
			missing++
			continue
		}
		missing = 0
		out = append(out, i)
	}
	return out
}

func (t *tail) drain() error {
	for {
		line, err := t.r.ReadBytes('\n')
		if err == io.EOF {
			t.partial = append(t.partial, line...)
			return nil
		}
		if err != nil {
			return fmt.Errorf("following the proxy log: %w", err)
		}
		if len(t.partial) > 0 {
			line = append(t.partial, line...)
			t.partial = nil
		}
		if r, ok := parseRecord(line); ok && t.filter.Match(r) {
			t.fn(r)
		}
	}
}

func (t *tail) close() {
	if t.f != nil {
		t.f.Close()
		t.f = nil
	}
}
