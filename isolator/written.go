package isolator

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// WrittenIndex is the name, in devsandbox's data directory, of the index of the host
// directories sandboxes of the user's write beyond their homes and /tmp: each project
// devsandbox ran, and each read-write bind a project's configuration gave its sandbox
// (rw_binds, read-write host_mounts, --mount). RecordProject appends to it; a line is
// never removed, not by `sandboxes rm` nor prune either: what a sandbox wrote into a
// directory stays there after its record is gone. SandboxWritten reads it, one file,
// instead of every project's record.
//
// Each line is `project "DIR"` or `bind "DIR" "PROJECT" "WHY"`, the fields quoted as
// Go strings. A complete line that does not read so makes SandboxWritten refuse every
// program it judges (fail closed), naming the file; removing it is the fix, and the
// next launch makes it again from the projects' records. A last line without its
// newline is another launch's append under way and is left out (recordWritten).
const WrittenIndex = "written"

// bindsRecord is the name of the record, beside a project's sandbox home, of the
// read-write binds its last launch gave it (the lines RecordProject appended to the
// index for them): a launch with the same binds reads it and writes nothing.
const bindsRecord = "binds"

// writtenEntry is one directory some sandbox of the user's writes, and why, for people.
type writtenEntry struct {
	dir, why string
}

// recordWritten appends to the index in data what it lacks of project and its
// read-write binds, and reports whether it did. Launches that record take turns (an
// flock on data) and each appends its lines with one write(2): once written, a byte
// of the index is never changed in place, so a reader sees a prefix of what the
// index will hold, an append under way perhaps cut short (readWritten leaves out a
// last line without its newline). An index is written whole to a new file renamed
// into place, so that a reader sees the old one or the new, when it is missing or
// holds no complete line (made from the projects' records, those an earlier
// devsandbox wrote, and these lines), and when its last line has no newline: a
// launch died writing it (its records were never written, so its next launch
// appends again), and the index is written again without it rather than have it
// glued to these lines.
func recordWritten(data string, lines []string) bool {
	d, err := os.Open(data)
	if err != nil {
		return false
	}
	defer d.Close() // which releases the lock, after the index's own Close
	if err := unix.Flock(int(d.Fd()), unix.LOCK_EX); err != nil {
		return false
	}
	path := filepath.Join(data, WrittenIndex)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return newWritten(data, lines)
	}
	if err != nil {
		return false
	}
	defer f.Close()
	end, size, err := completeEnd(f)
	switch {
	case err != nil:
		return false
	case end == 0:
		return newWritten(data, lines)
	case end < size:
		b := make([]byte, end)
		if _, err := f.ReadAt(b, 0); err != nil {
			return false
		}
		return replaceFile(path, string(b)+strings.Join(lines, "")) == nil
	}
	_, err = f.WriteString(strings.Join(lines, ""))
	return err == nil
}

// newWritten puts in place an index of the projects' records in data and lines.
func newWritten(data string, lines []string) bool {
	seed := slices.DeleteFunc(recordsLines(data), func(l string) bool { return slices.Contains(lines, l) })
	return replaceFile(filepath.Join(data, WrittenIndex), strings.Join(append(seed, lines...), "")) == nil
}

// replaceFile writes content to a new file beside path and renames it to path: a
// reader of path sees the old content or the new, never a part.
func replaceFile(path, content string) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	_, err = f.WriteString(content)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}

// completeEnd returns the length of f's content up to and including its last
// newline, and its size.
func completeEnd(f *os.File) (end, size int64, err error) {
	fi, err := f.Stat()
	if err != nil {
		return 0, 0, err
	}
	buf := make([]byte, 4096)
	for end := fi.Size(); end > 0; end -= int64(len(buf)) {
		off := max(end-int64(len(buf)), 0)
		b := buf[:end-off]
		if _, err := f.ReadAt(b, off); err != nil {
			return 0, 0, err
		}
		if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
			return off + int64(i) + 1, fi.Size(), nil
		}
	}
	return 0, fi.Size(), nil
}

// recordsLines are the index lines of the projects' records in data (their
// directories only: the binds of a project recorded by an earlier devsandbox are not
// known).
func recordsLines(data string) []string {
	var lines []string
	ents, _ := os.ReadDir(data)
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(data, e.Name(), "project"))
		if err != nil {
			continue
		}
		if proj := strings.TrimSpace(string(b)); filepath.IsAbs(proj) {
			lines = append(lines, projectLine(proj))
		}
	}
	return lines
}

func projectLine(dir string) string {
	return "project " + strconv.Quote(dir) + "\n"
}

func bindLine(dir, project, why string) string {
	return "bind " + strconv.Quote(dir) + " " + strconv.Quote(project) + " " + strconv.Quote(why) + "\n"
}

// rwBindLines are the index lines of p's read-write binds (an anchor lies in one)
// that lie outside its project and devsandbox's data and state (which the index
// and the roots cover).
func rwBindLines(p *Plan, data, state string) []string {
	var lines []string
	for _, m := range p.Mounts {
		if m.Kind != Bind || m.ReadOnly || m.Anchor || !filepath.IsAbs(m.Source) ||
			Within(m.Source, p.Project.Dir) || Within(m.Source, data) || (state != "" && Within(m.Source, state)) {
			continue
		}
		if l := bindLine(m.Source, p.Project.Dir, m.Why); !slices.Contains(lines, l) {
			lines = append(lines, l)
		}
	}
	slices.Sort(lines)
	return lines
}

// errBadIndex is a line of the index that does not read.
var errBadIndex = errors.New("not a line devsandbox writes")

// readWritten returns the entries of the index in data; ok is false when there is
// none, or none with a complete line (a data directory of an earlier devsandbox, the
// first launch's index not written yet), and err names a line that does not read. A
// last line without its newline is left out: a launch appending to the index may be
// under way (recordWritten), and until its append took it has written no record
// either. A complete line that does not read is refused.
func readWritten(data string) (ents []writtenEntry, ok bool, err error) {
	path := filepath.Join(data, WrittenIndex)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, true, err
	}
	b = b[:bytes.LastIndexByte(b, '\n')+1]
	if len(b) == 0 {
		return nil, false, nil
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, len(b)+1)
	for n := 1; sc.Scan(); n++ {
		e, err := parseWritten(sc.Text())
		if err != nil {
			return nil, true, fmt.Errorf("line %d: %w", n, err)
		}
		ents = append(ents, e)
	}
	return ents, true, nil
}

func parseWritten(line string) (writtenEntry, error) {
	kind, rest, _ := strings.Cut(line, " ")
	var fields []string
	for rest != "" {
		q, err := strconv.QuotedPrefix(rest)
		if err != nil {
			return writtenEntry{}, errBadIndex
		}
		s, _ := strconv.Unquote(q)
		fields = append(fields, s)
		rest = strings.TrimPrefix(rest[len(q):], " ")
	}
	if len(fields) == 0 || !filepath.IsAbs(fields[0]) {
		return writtenEntry{}, errBadIndex
	}
	switch {
	case kind == "project" && len(fields) == 1:
		return writtenEntry{fields[0], "the devsandbox project " + fields[0] + ", which its sandbox writes"}, nil
	case kind == "bind" && len(fields) == 3:
		return writtenEntry{fields[0], "bound read-write (" + fields[2] + ") into the sandbox of the devsandbox project " + fields[1] + ", which writes it"}, nil
	}
	return writtenEntry{}, errBadIndex
}

// writtenIDs adds to ids the identities of the directories sandboxes write by the
// index in data, or, when there is none, by the projects' records.
func writtenIDs(data string, ids map[fileID]string) error {
	ents, ok, err := readWritten(data)
	if err != nil {
		return fmt.Errorf("%w: devsandbox's index of the directories sandboxes write, %s, does not read (%w), so no program on the host can be judged against it; remove it: the next launch makes it again from the projects' records (projects removed by `devsandbox sandboxes rm` or prune are then no longer known)",
			ErrProtection, filepath.Join(data, WrittenIndex), err)
	}
	if !ok {
		for _, l := range recordsLines(data) {
			if e, err := parseWritten(strings.TrimSuffix(l, "\n")); err == nil {
				ents = append(ents, e)
			}
		}
	}
	seen := make(map[string]bool, len(ents))
	for _, e := range ents {
		if seen[e.dir] {
			continue // a line appended again (a bind's reason changed, a seed)
		}
		seen[e.dir] = true
		if id, ok := idOf(e.dir); ok {
			if _, seen := ids[id]; !seen {
				ids[id] = e.why
			}
		}
	}
	return nil
}
