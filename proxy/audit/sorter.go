package audit

import (
	"bufio"
	"container/heap"
	"fmt"
	"io"
	"os"
	"slices"
	"time"
)

// SortBudget is about how many bytes of log lines EachLog and Follow's backlog hold
// in memory; beyond it, each SortBudget of lines is sorted and written to a
// temporary file of its own, and the files are merged.
const SortBudget = 16 << 20

// heldOverhead is what a held line costs beside its bytes (heldLine).
const heldOverhead = 48

// sorter orders log lines by their record's Time, stably (lines of equal Time keep
// the order they were added in), holding about budget bytes of them: an external
// merge sort. Lines are added with add, then given in order, parsed, by emit. The
// temporary files go in dir (the log's directory, on disk; else the system's
// temporary directory) and are unlinked as soon as they are made: nothing stays
// behind, whatever ends the process. An error of add is kept in err, and add does
// nothing more.
type sorter struct {
	dir    string
	budget int
	held   []heldLine // the lines added since the last spill
	size   int        // held's bytes, heldOverhead each included
	runs   []*os.File // the spilled runs, in the order they were added, each sorted
	err    error
}

// heldLine is a line added to a sorter and its record's Time.
type heldLine struct {
	t    time.Time
	line []byte
}

func newSorter(dir string, budget int) *sorter { return &sorter{dir: dir, budget: budget} }

// add adds line, a record of Time t (line is kept: it must not change).
func (s *sorter) add(t time.Time, line []byte) {
	if s.err != nil {
		return
	}
	s.held = append(s.held, heldLine{t: t, line: line})
	s.size += len(line) + heldOverhead
	if s.size >= s.budget {
		s.err = s.spill()
	}
}

// sortHeld sorts held by Time, stably.
func (s *sorter) sortHeld() {
	slices.SortStableFunc(s.held, func(a, b heldLine) int { return a.t.Compare(b.t) })
}

// spill writes held, sorted, to a temporary file, a run, and empties it.
func (s *sorter) spill() error {
	s.sortHeld()
	f, err := spillFile(s.dir)
	if err != nil {
		return err
	}
	s.runs = append(s.runs, f)
	w := bufio.NewWriterSize(f, 64<<10)
	for _, h := range s.held {
		if _, err := w.Write(h.line); err != nil {
			return fmt.Errorf("writing a sorted part of the log to a temporary file: %w", err)
		}
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("writing a sorted part of the log to a temporary file: %w", err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	s.held, s.size = nil, 0
	return nil
}

// spillFile makes an unlinked temporary file in dir, else in the system's temporary
// directory.
func spillFile(dir string) (*os.File, error) {
	f, err := os.CreateTemp(dir, ".devsandbox-log-sort-*")
	if err != nil {
		if f, err = os.CreateTemp("", "devsandbox-log-sort-*"); err != nil {
			return nil, fmt.Errorf("making a temporary file to sort the log: %w", err)
		}
	}
	if err := os.Remove(f.Name()); err != nil {
		f.Close()
		return nil, fmt.Errorf("unlinking the temporary file that sorts the log: %w", err)
	}
	return f, nil
}

// emit calls fn with the record of every line added, in order. The lines held last
// are a run of their own, after the spilled ones: a tie between runs goes to the
// earlier, which holds the earlier-added lines.
func (s *sorter) emit(fn func(Record)) error {
	if s.err != nil {
		return s.err
	}
	s.sortHeld()
	if len(s.runs) == 0 {
		for _, h := range s.held {
			if r, ok := parseRecord(h.line); ok {
				fn(r)
			}
		}
		return nil
	}
	m := &merge{}
	for i, f := range s.runs {
		src := &run{r: bufio.NewReaderSize(f, 16<<10), i: i}
		if err := m.push(src); err != nil {
			return err
		}
	}
	if err := m.push(&run{held: s.held, i: len(s.runs)}); err != nil {
		return err
	}
	s.held = nil
	for m.Len() > 0 {
		src := m.heads[0]
		fn(src.head)
		ok, err := src.next()
		if err != nil {
			return err
		}
		if ok {
			heap.Fix(m, 0)
		} else {
			heap.Pop(m)
		}
	}
	return nil
}

// close closes the runs' files (unlinked already: their space goes with them).
func (s *sorter) close() {
	for _, f := range s.runs {
		f.Close()
	}
	s.runs, s.held = nil, nil
}

// run is one sorted source of a merge: a spilled file's reader, or the held lines.
type run struct {
	r    *bufio.Reader
	held []heldLine
	i    int // its place among the runs: ties go to the lower
	head Record
}

// next reads the run's next record into head; false at its end.
func (r *run) next() (bool, error) {
	for {
		var line []byte
		if r.r == nil {
			if len(r.held) == 0 {
				return false, nil
			}
			line, r.held = r.held[0].line, r.held[1:]
		} else {
			var err error
			line, err = r.r.ReadBytes('\n')
			if err == io.EOF && len(line) == 0 {
				return false, nil
			}
			if err != nil && err != io.EOF {
				return false, fmt.Errorf("reading a sorted part of the log back: %w", err)
			}
		}
		if rec, ok := parseRecord(line); ok {
			r.head = rec
			return true, nil
		}
	}
}

// merge is a heap of runs by their head's Time, then their place.
type merge struct{ heads []*run }

func (m *merge) push(r *run) error {
	ok, err := r.next()
	if err != nil || !ok {
		return err
	}
	heap.Push(m, r)
	return nil
}

func (m *merge) Len() int { return len(m.heads) }
func (m *merge) Less(i, j int) bool {
	a, b := m.heads[i], m.heads[j]
	if c := a.head.Time.Compare(b.head.Time); c != 0 {
		return c < 0
	}
	return a.i < b.i
}
func (m *merge) Swap(i, j int) { m.heads[i], m.heads[j] = m.heads[j], m.heads[i] }
func (m *merge) Push(x any)    { m.heads = append(m.heads, x.(*run)) }
func (m *merge) Pop() any {
	r := m.heads[len(m.heads)-1]
	m.heads = m.heads[:len(m.heads)-1]
	return r
}
