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
	"slices"
	"strings"
	"time"
)

// LogFilter selects Records; its zero value selects all.
type LogFilter struct {
	Denied  bool      // only denied records (KindDropped ones included)
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

// ReadLog returns the records of the audit log in dir that match filter, oldest first
// (by Time; records of one session keep their order), across every session's file and
// the legacy log. A missing log is no records, not an error; a line that does not parse
// (one cut short by a crash) is skipped. The slice holds them all: EachLog does not.
func ReadLog(dir string, filter LogFilter) ([]Record, error) {
	var out []Record
	if err := EachLog(dir, filter, func(r Record) { out = append(out, r) }); err != nil {
		return nil, err
	}
	return out, nil
}

// EachLog calls fn with the records ReadLog returns, in its order, holding about
// SortBudget bytes of them at most (an external merge sort: package sorter), so that
// what a sandbox had the proxy record does not set the reader's memory. A record's
// Time is when its request started and it is written when it ends, so a file is not
// in Time order and every record is read before the first is given.
func EachLog(dir string, filter LogFilter, fn func(Record)) error {
	return eachLog(dir, filter, SortBudget, fn)
}

// eachLog is EachLog holding about budget bytes.
func eachLog(dir string, filter LogFilter, budget int, fn func(Record)) error {
	s := newSorter(dir, budget)
	defer s.close()
	for _, name := range logFiles(dir) {
		f, err := os.Open(name)
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed as expired meanwhile
		}
		if err != nil {
			return fmt.Errorf("reading the proxy log: %w", err)
		}
		_, err = readLinesWith(f, parseKey, func(r Record, line []byte) {
			if filter.Match(r) {
				s.add(r.Time, line)
			}
		})
		f.Close()
		if err != nil {
			return fmt.Errorf("reading the proxy log %s: %w", name, err)
		}
		if s.err != nil {
			return fmt.Errorf("reading the proxy log: %w", s.err)
		}
	}
	if err := s.emit(fn); err != nil {
		return fmt.Errorf("reading the proxy log: %w", err)
	}
	return nil
}

// logFiles lists the log's files, oldest first: the legacy rotated files and the
// legacy file, then the session files in the order they started.
func logFiles(dir string) []string {
	legacy := filepath.Join(dir, LegacyLogFile)
	var out []string
	for i := range legacyRotations(legacy) {
		out = append(out, fmt.Sprintf("%s.%d", legacy, i+1))
	}
	slices.Reverse(out)
	out = append(out, legacy)
	sessions, _ := filepath.Glob(filepath.Join(dir, LogSubdir, "*.jsonl"))
	slices.Sort(sessions) // names start with the start time
	return append(out, sessions...)
}

// legacyRotations is how many rotated legacy files there are (.1 to .N).
func legacyRotations(path string) int {
	n := 0
	for {
		if _, err := os.Lstat(fmt.Sprintf("%s.%d", path, n+1)); err != nil {
			return n
		}
		n++
	}
}

// readLines calls fn with each record of the complete lines r holds, and the line
// (its own copy, newline included), and returns the number of bytes those lines take:
// a last line without its newline (still being written) is left for later.
func readLines(r io.Reader, fn func(Record, []byte)) (int64, error) {
	return readLinesWith(r, parseRecord, fn)
}

// readLinesWith is readLines with the records parsed by parse.
func readLinesWith(r io.Reader, parse func([]byte) (Record, bool), fn func(Record, []byte)) (int64, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var n int64
	for {
		line, err := br.ReadBytes('\n')
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
		n += int64(len(line))
		if rec, ok := parse(line); ok {
			fn(rec, line)
		}
	}
}

func parseRecord(line []byte) (Record, bool) {
	var r Record
	if len(bytes.TrimSpace(line)) == 0 || json.Unmarshal(line, &r) != nil {
		return Record{}, false
	}
	return r, true
}

// parseKey parses of line what LogFilter.Match and the sort read (Time, Session,
// Host, Decision): what is sorted is parsed whole once, on the way out, where a line
// parseRecord refuses is skipped (it refuses every line parseKey does).
func parseKey(line []byte) (Record, bool) {
	var k struct {
		Time     time.Time `json:"time"`
		Session  string    `json:"session"`
		Host     string    `json:"host"`
		Decision string    `json:"decision"`
	}
	if len(bytes.TrimSpace(line)) == 0 || json.Unmarshal(line, &k) != nil {
		return Record{}, false
	}
	return Record{Time: k.Time, Session: k.Session, Host: k.Host, Decision: k.Decision}, true
}

// followPoll is how often Follow looks for new lines and new files.
const followPoll = 200 * time.Millisecond

// Follow calls fn with every record in the log in dir that matches filter: first
// those already written, as ReadLog returns them, then new ones as they are appended
// to any session's file, new sessions' files included, until ctx is done (then it
// returns nil). The log need not exist yet. Nothing is lost between polls: files only
// grow, and each is read from where the last poll left it. The records already written
// are ordered as EachLog orders them, holding as little.
func Follow(ctx context.Context, dir string, filter LogFilter, fn func(Record)) error {
	return follow(ctx, dir, filter, SortBudget, fn)
}

// follow is Follow holding about budget bytes of the backlog.
func follow(ctx context.Context, dir string, filter LogFilter, budget int, fn func(Record)) error {
	read := map[string]int64{} // bytes of each file already read
	backlog := newSorter(dir, budget)
	defer backlog.close()
	if err := pollWith(dir, read, parseKey, func(r Record, line []byte) {
		if filter.Match(r) {
			backlog.add(r.Time, line)
		}
	}); err != nil {
		return err
	}
	if err := backlog.emit(fn); err != nil {
		return fmt.Errorf("following the proxy log: %w", err)
	}
	emit := func(r Record, _ []byte) {
		if filter.Match(r) {
			fn(r)
		}
	}
	tick := time.NewTicker(followPoll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		if err := poll(dir, read, emit); err != nil {
			return err
		}
	}
}

// poll reads what each log file holds past read[name], and records the new offsets.
func poll(dir string, read map[string]int64, fn func(Record, []byte)) error {
	return pollWith(dir, read, parseRecord, fn)
}

// pollWith is poll with the records parsed by parse.
func pollWith(dir string, read map[string]int64, parse func([]byte) (Record, bool), fn func(Record, []byte)) error {
	for _, name := range logFiles(dir) {
		fi, err := os.Stat(name)
		if err != nil || fi.Size() <= read[name] {
			continue
		}
		f, err := os.Open(name)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("following the proxy log: %w", err)
		}
		if _, err := f.Seek(read[name], io.SeekStart); err != nil {
			f.Close()
			return fmt.Errorf("following the proxy log: %w", err)
		}
		n, err := readLinesWith(f, parse, fn)
		f.Close()
		read[name] += n
		if err != nil {
			return fmt.Errorf("following the proxy log %s: %w", name, err)
		}
	}
	return nil
}
