package audit

import (
	"bytes"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"time"
)

// closeRecorder is an io.Writer that fails the test when closed.
type closeRecorder struct {
	bytes.Buffer
	t *testing.T
}

func (c *closeRecorder) Close() error { c.t.Error("the stream was closed"); return nil }

// TestStreamRelay: what a stream Writer writes, Relay writes to the session's file as
// the file Writer would have: the same lines, the budget's marker included.
func TestStreamRelay(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1000, 0)}
	out := &closeRecorder{t: t}
	s := NewStream(out, "s1", Options{DeniedBudget: 1, Now: clock.now})
	recs := []Record{seqRecord(1), denied("a.test", 80), denied("a.test", 80), seqRecord(2)}
	for _, r := range recs {
		r.Session = "s1"
		if err := s.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	streamed := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")

	dir := t.TempDir()
	w, err := Open(dir, "s1", Options{DeniedBudget: 1, Now: clock.now})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Relay(strings.NewReader(out.String())); err != nil {
		t.Fatalf("Relay: %v", err)
	}
	w.Close()
	got := sessionLines(t, dir, "s1")
	if !slices.Equal(got, streamed) {
		t.Errorf("relayed:\n%s\nstreamed:\n%s", strings.Join(got, "\n"), strings.Join(streamed, "\n"))
	}
	// The stream held: 2 allowed, 1 denied, the marker of the drop (written at once).
	if len(streamed) != 4 || !strings.Contains(streamed[2], `"kind":"dropped"`) {
		t.Errorf("stream:\n%s", out.String())
	}
}

// TestRelayRefuses: a line that is not a record, one longer than a record can be and
// a record of another session are skipped, the records after them are written, and
// Relay reports the first as ErrRelayed; a last line without its newline counts.
func TestRelayRefuses(t *testing.T) {
	good := func(i int) string {
		var b bytes.Buffer
		s := NewStream(&b, "s1", Options{})
		r := seqRecord(i)
		r.Session = "s1"
		s.Write(r)
		return b.String()
	}
	other := strings.Replace(good(2), `"session":"s1"`, `"session":"s2"`, 1)
	long := `{"host":"` + strings.Repeat("x", 2*MaxRecordBytes) + `"}` + "\n"
	in := good(1) + "not json\n" + long + other + good(3) + strings.TrimSuffix(good(4), "\n")
	dir := t.TempDir()
	w, err := Open(dir, "s1", Options{})
	if err != nil {
		t.Fatal(err)
	}
	err = w.Relay(strings.NewReader(in))
	if !errors.Is(err, ErrRelayed) || !strings.Contains(err.Error(), "not a record") {
		t.Errorf("Relay: %v, want ErrRelayed naming the first bad line", err)
	}
	w.Close()
	want := []string{strings.TrimSpace(good(1)), strings.TrimSpace(good(3)), strings.TrimSpace(good(4))}
	if got := sessionLines(t, dir, "s1"); !slices.Equal(got, want) {
		t.Errorf("relayed:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestRelayReadError: a failing stream ends Relay with its error, after the records
// it held.
func TestRelayReadError(t *testing.T) {
	dir := t.TempDir()
	w, err := Open(dir, "s1", Options{})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	s := NewStream(&b, "s1", Options{})
	r := seqRecord(1)
	r.Session = "s1"
	s.Write(r)
	boom := errors.New("boom")
	if err := w.Relay(io.MultiReader(&b, iotestErr{boom})); !errors.Is(err, boom) {
		t.Errorf("Relay: %v, want %v", err, boom)
	}
	w.Close()
	if got := sessionLines(t, dir, "s1"); len(got) != 1 {
		t.Errorf("relayed %q", got)
	}
}

type iotestErr struct{ err error }

func (e iotestErr) Read([]byte) (int, error) { return 0, e.err }
