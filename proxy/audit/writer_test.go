package audit

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func seqRecord(i int) Record {
	return Record{Kind: KindRequest, Time: time.Unix(int64(i), 0).UTC(), Method: "GET", Host: fmt.Sprintf("h%02d.test", i), Port: 80, Decision: DecisionAllow}
}

func denied(host string, port int) Record {
	return Record{Kind: KindRequest, Time: time.Unix(1, 0).UTC(), Method: "GET", Host: host, Port: port, Decision: DecisionDeny, Rule: RuleDefault}
}

// fakeClock is a clock the test moves.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

// sessionLines reads the lines of the one file of session in dir.
func sessionLines(t *testing.T, dir, session string) []string {
	t.Helper()
	names, _ := filepath.Glob(filepath.Join(dir, LogSubdir, "*-"+session+".jsonl"))
	if len(names) != 1 {
		t.Fatalf("files of %s: %v", session, names)
	}
	b, err := os.ReadFile(names[0])
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

// TestBudget: every allowed record is written; denied ones up to the budget, then the
// first for each new destination up to as many again, and the rest are counted in
// KindDropped records: at the first drop, at most every markerInterval, and at Close.
func TestBudget(t *testing.T) {
	dir := t.TempDir()
	clock := &fakeClock{t: time.Unix(1000, 0)}
	w, err := Open(dir, "s1", Options{DeniedBudget: 3, Now: clock.now})
	if err != nil {
		t.Fatal(err)
	}
	write := func(r Record) {
		t.Helper()
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	for range 5 {
		write(denied("a.test", 80)) // 3 written, 2 dropped (a marker at the first)
	}
	write(seqRecord(1))         // allowed: always
	write(denied("b.test", 80)) // new destination: written
	write(denied("b.test", 80)) // dropped
	clock.t = clock.t.Add(markerInterval)
	write(denied("a.test", 80)) // dropped: a marker for 3
	for _, h := range []string{"c", "d", "e", "f"} {
		write(denied(h+".test", 80)) // new: written, up to 6 destinations (2 × budget)
	}
	write(denied("g.test", 80)) // new, but past 2 × budget: dropped
	write(seqRecord(2))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, line := range sessionLines(t, dir, "s1") {
		var r Record
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatal(err)
		}
		if r.Kind == KindDropped {
			got = append(got, fmt.Sprintf("dropped %d", r.Dropped))
		} else {
			got = append(got, r.Decision+" "+r.Host)
		}
	}
	want := []string{"deny a.test", "deny a.test", "deny a.test", "dropped 1", "allow h01.test", "deny b.test", "dropped 3",
		"deny c.test", "deny d.test", "deny e.test", "deny f.test", "allow h02.test", "dropped 1"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("log:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestBounded: whatever a record holds, its line stays within MaxRecordBytes, a cut
// path keeps its length, and the JSON is valid.
func TestBounded(t *testing.T) {
	dir := t.TempDir()
	w, _ := Open(dir, "s", Options{})
	huge := strings.Repeat("\x01\"<\u2028\xff\u009b\u202e\U000E0041", 20000)
	w.Write(Record{Time: time.Unix(0, 0), Method: huge, Host: huge, Path: "/" + huge, Decision: DecisionDeny + huge, Rule: huge, Reason: huge,
		Error: huge, Special: huge, Credential: huge, Session: huge})
	w.Write(Record{Time: time.Unix(0, 0), Path: "/short", Decision: DecisionAllow})
	var refs []RefUpdate
	for range 100 {
		refs = append(refs, RefUpdate{Ref: huge, Old: huge, New: huge})
	}
	push := &Push{Repo: huge, Refs: refs}
	w.Write(Record{Kind: KindPush, Time: time.Unix(0, 0), Method: huge, Host: huge, Decision: DecisionDeny, Rule: huge, Reason: huge,
		Error: huge, Special: huge, Credential: huge, Session: huge, Push: push})
	w.Write(Record{Kind: KindPush, Time: time.Unix(0, 0), Host: "git.test", Decision: DecisionDeny, Rule: RuleGitPush, Push: push})
	w.Close()
	if len(push.Refs) != 100 || push.Repo != huge {
		t.Error("Write changed the caller's push")
	}
	lines := sessionLines(t, dir, "s")
	for _, line := range lines {
		if len(line) > MaxRecordBytes {
			t.Errorf("a line of %d bytes", len(line))
		}
		var r Record
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Errorf("%v: %.200s", err, line)
		}
	}
	var r Record
	json.Unmarshal([]byte(lines[0]), &r)
	if r.PathBytes != len(huge)+1 || len(r.Path) == 0 || len(r.Path) > MaxPathBytes || r.Kind != KindRequest {
		t.Errorf("cut path: %d bytes kept, path_bytes %d, kind %q", len(r.Path), r.PathBytes, r.Kind)
	}
	r = Record{}
	json.Unmarshal([]byte(lines[1]), &r)
	if r.PathBytes != 0 || r.Path != "/short" {
		t.Errorf("short path: %q, %d", r.Path, r.PathBytes)
	}
	// A push keeps what fits: its repository cut, some of its refs, and their count.
	for _, line := range lines[2:4] {
		r = Record{}
		json.Unmarshal([]byte(line), &r)
		if r.Push == nil || r.Push.Repo == "" || r.Push.RefsTotal != 100 || len(r.Push.Refs) == 0 || len(r.Push.Refs) == 100 {
			t.Errorf("push record: %.300s", line)
		}
	}
}

func TestCutEncoded(t *testing.T) {
	for _, tt := range []struct {
		s    string
		max  int
		want string
		cut  bool
	}{
		{"abc", 3, "abc", false}, {"abcd", 3, "abc", true}, {"é", 1, "", true}, {"aé", 3, "aé", false},
		{"a\x01", 6, "a", true}, {`a"`, 3, `a"`, false}, {"\xffx", 7, "\xffx", false}, {"a\u2028", 6, "a", true},
	} {
		if got, cut := cutEncoded(tt.s, tt.max); got != tt.want || cut != tt.cut {
			t.Errorf("cutEncoded(%q, %d) = %q, %v; want %q, %v", tt.s, tt.max, got, cut, tt.want, tt.cut)
		}
	}
}

// TestRetention: Open removes files last written before the retention, legacy ones
// included, and no other; sessions never share a file.
func TestRetention(t *testing.T) {
	dir := t.TempDir()
	clock := &fakeClock{t: time.Unix(1_000_000_000, 0)}
	old, _ := Open(dir, "old", Options{Now: clock.now})
	old.Write(seqRecord(1))
	old.Close()
	recent, _ := Open(dir, "recent", Options{Now: clock.now})
	recent.Close()
	legacy := filepath.Join(dir, LegacyLogFile)
	os.WriteFile(legacy, nil, 0o600)
	ancient := time.Now().Add(-100 * 24 * time.Hour)
	oldName, _ := filepath.Glob(filepath.Join(dir, LogSubdir, "*-old.jsonl"))
	os.Chtimes(oldName[0], ancient, ancient)
	os.Chtimes(legacy, ancient, ancient)
	quiet, _ := Open(dir, "quiet", Options{Now: clock.now}) // a live session, quiet for long
	quietName, _ := filepath.Glob(filepath.Join(dir, LogSubdir, "*-quiet.jsonl"))
	os.Chtimes(quietName[0], ancient, ancient)
	w, err := Open(dir, "new", Options{})
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	left, _ := filepath.Glob(filepath.Join(dir, LogSubdir, "*"))
	if len(left) != 3 || slices.ContainsFunc(left, func(n string) bool { return strings.HasSuffix(n, "-old.jsonl") }) {
		t.Errorf("left: %v", left)
	}
	quiet.Close()
	if _, err := os.Stat(legacy); !os.IsNotExist(err) {
		t.Errorf("expired legacy file kept: %v", err)
	}
	same1, _ := Open(dir, "same", Options{Now: clock.now})
	same2, _ := Open(dir, "same", Options{Now: clock.now})
	same1.Close()
	same2.Close()
	if n, _ := filepath.Glob(filepath.Join(dir, LogSubdir, "*-same*.jsonl")); len(n) != 2 {
		t.Errorf("two writers of one session at one instant: %v", n)
	}
	fi, _ := os.Stat(filepath.Join(dir, LogSubdir))
	if fi.Mode().Perm() != 0o700 {
		t.Errorf("log directory mode %v", fi.Mode().Perm())
	}
}

func TestFileSafe(t *testing.T) {
	for in, want := range map[string]string{"abc-12_3": "abc-12_3", "../x": "___x", "": "session", strings.Repeat("a", 80): strings.Repeat("a", 64)} {
		if got := fileSafe(in); got != want {
			t.Errorf("fileSafe(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestWriteEscapesForTheTerminal: a line of the log holds no character a terminal
// acts on (C1 controls, bidi overrides, zero-width and tag characters are written as
// \u escapes, as encoding/json writes the C0 ones), and reads back as the values
// written.
func TestWriteEscapesForTheTerminal(t *testing.T) {
	dir := t.TempDir()
	w, _ := Open(dir, "s", Options{})
	host := "a\u202eb\u009b2K\u200bc\U000E0041.test"
	path := "/evil\u202etxt.exe\u2066\x1b]0;x\a"
	w.Write(Record{Time: time.Unix(0, 0), Method: "CONNECT", Host: host, Path: path, Decision: DecisionDeny})
	w.Close()
	lines := sessionLines(t, dir, "s")
	if len(lines) != 1 {
		t.Fatalf("lines: %q", lines)
	}
	if want := `"host":"a\u202eb\u009b2K\u200bc\udb40\udc41.test","port":0,"path":"/evil\u202etxt.exe\u2066\u001b]0;x\u0007"`; !strings.Contains(lines[0], want) {
		t.Errorf("line %s\nwant it to hold %s", lines[0], want)
	}
	var r Record
	if err := json.Unmarshal([]byte(lines[0]), &r); err != nil || r.Host != host || r.Path != path {
		t.Errorf("reads back as %q %q (%v), want %q %q", r.Host, r.Path, err, host, path)
	}
}
