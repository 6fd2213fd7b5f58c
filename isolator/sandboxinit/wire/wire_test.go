package wire

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

func TestFramesRoundTrip(t *testing.T) {
	var b bytes.Buffer
	h := &Hello{Env: map[string]string{"TOKEN": "v"}, Files: map[string][]byte{"DB": []byte("x\x00y")}, Rows: 30, Cols: 100}
	if err := WriteHello(&b, h); err != nil {
		t.Fatal(err)
	}
	_ = WriteFrame(&b, FrameData, []byte("input"))
	_ = WriteFrame(&b, FrameResize, ResizePayload(40, 120))
	_ = WriteFrame(&b, FrameClose, nil)

	typ, p, err := ReadFrame(&b)
	if err != nil || typ != FrameHello {
		t.Fatalf("hello: %c %v", typ, err)
	}
	got, err := ParseHello(p)
	if err != nil || got.Env["TOKEN"] != "v" || string(got.Files["DB"]) != "x\x00y" || got.Rows != 30 || got.Cols != 100 {
		t.Fatalf("hello: %+v %v", got, err)
	}
	if typ, p, _ = ReadFrame(&b); typ != FrameData || string(p) != "input" {
		t.Fatalf("data: %c %q", typ, p)
	}
	typ, p, _ = ReadFrame(&b)
	if r, c, ok := ParseResize(p); typ != FrameResize || !ok || r != 40 || c != 120 {
		t.Fatalf("resize: %c %d %d", typ, r, c)
	}
	if typ, _, _ = ReadFrame(&b); typ != FrameClose {
		t.Fatalf("close: %c", typ)
	}
	if _, _, err := ReadFrame(&b); !errors.Is(err, io.EOF) {
		t.Fatalf("end: %v", err)
	}
	b.Write([]byte{FrameData, 0, 0, 0, 9, 'a'})
	if _, _, err := ReadFrame(&b); !errors.Is(err, ErrTruncated) {
		t.Fatalf("truncated: %v", err)
	}
}

func TestReportStripsMarker(t *testing.T) {
	tests := []struct {
		name   string
		chunks []string
		out    string
		ready  bool
		fail   string
	}{
		{"ready alone", []string{ReadyMarker}, "", true, ""},
		{"ready then output", []string{ReadyMarker + "hello\n"}, "hello\n", true, ""},
		{"split marker", []string{"warn\n\x1b_devs", "andbox:rea", "dy\x1b", "\\after"}, "warn\nafter", true, ""},
		{"failure", []string{FailMarker("mask /p/.env\nis writable")}, "", false, "mask /p/.env is writable"},
		{"foreign escapes pass", []string{"\x1b[31mred\x1b[0m" + ReadyMarker + "\x1b_devsandbox:ready\x1b\\"}, "\x1b[31mred\x1b[0m\x1b_devsandbox:ready\x1b\\", true, ""},
		{"no marker", []string{"plain output"}, "plain output", false, ""},
	}
	for _, tt := range tests {
		var out bytes.Buffer
		r := NewReport(&out)
		for _, c := range tt.chunks {
			if _, err := r.Write([]byte(c)); err != nil {
				t.Fatal(err)
			}
		}
		_ = r.Flush()
		ready, fail := r.Result()
		if out.String() != tt.out || ready != tt.ready || fail != tt.fail {
			t.Errorf("%s: out %q ready %v fail %q; want %q %v %q", tt.name, out.String(), ready, fail, tt.out, tt.ready, tt.fail)
		}
	}
}

// TestReportOOM: the init's out-of-memory report is found after the command's output,
// split across writes, removed from it, and only with the session's nonce: a command
// printing a report of its own (without the nonce) is passed through as output.
func TestReportOOM(t *testing.T) {
	const nonce = "0123abcd"
	for _, tc := range []struct {
		name   string
		writes []string
		oom    bool
		out    string
	}{
		{"whole", []string{ReadyMarker, "output\n", OOMMarker(nonce)}, true, "output\n"},
		{"split", []string{ReadyMarker + "out", "put\n\x1b_devsan", "dbox:oom:0123", "abcd\x1b\\"}, true, "output\n"},
		{"byte by byte", append([]string{ReadyMarker, "x"}, strings.Split(OOMMarker(nonce), "")...), true, "x"},
		{"forged", []string{ReadyMarker, OOMMarker("guessed"), "\n"}, false, OOMMarker("guessed") + "\n"},
		{"escape that is not one", []string{ReadyMarker, "\x1b[31mred\x1b[0m\n"}, false, "\x1b[31mred\x1b[0m\n"},
		{"none", []string{ReadyMarker, "done\n"}, false, "done\n"},
	} {
		var out strings.Builder
		r := NewReport(&out)
		r.ExpectOOM(nonce)
		for _, w := range tc.writes {
			if _, err := r.Write([]byte(w)); err != nil {
				t.Fatal(err)
			}
		}
		if err := r.Flush(); err != nil {
			t.Fatal(err)
		}
		if r.OOM() != tc.oom || out.String() != tc.out {
			t.Errorf("%s: OOM %v, output %q; want %v, %q", tc.name, r.OOM(), out.String(), tc.oom, tc.out)
		}
	}
}

// TestReportAgentStream: the init's request for the agent's stream, before its
// ready marker, calls OnAgentStream once and is not passed on; after the ready
// marker (the command's output) it is the command's, passed on, and calls nothing.
func TestReportAgentStream(t *testing.T) {
	var out strings.Builder
	calls := 0
	r := NewReport(&out)
	r.OnAgentStream = func() { calls++ }
	in := "a" + AgentStreamMarker[:5] + "|" + AgentStreamMarker[5:] + AgentStreamMarker + "b" + ReadyMarker + "c" + AgentStreamMarker
	for _, part := range strings.Split(in, "|") {
		if _, err := r.Write([]byte(part)); err != nil {
			t.Fatal(err)
		}
	}
	if calls != 1 {
		t.Errorf("OnAgentStream called %d times, want 1", calls)
	}
	if ready, _ := r.Result(); !ready {
		t.Error("the ready marker after the request was not seen")
	}
	if want := "abc" + AgentStreamMarker; out.String() != want {
		t.Errorf("passed on %q, want %q", out.String(), want)
	}
}

// TestReportRefused: the init's reports of connections the keeper refused are found
// after the command's output (also split across writes and next to the out-of-memory
// report), removed from it and handed on; only with the session's nonce: a command
// printing one of its own is passed through as output, as is one far too long.
func TestReportRefused(t *testing.T) {
	const nonce = "0123abcd"
	ref := Refusal{Method: "GET", Host: "example.com", Port: 80, Path: "/x", Reason: "two sessions"}
	m := RefusedMarker(nonce, ref)
	long := refusedPrefix(nonce) + strings.Repeat("a", MaxRefusalBytes+1)
	for _, tc := range []struct {
		name   string
		writes []string
		got    int
		oom    bool
		out    string
	}{
		{"whole", []string{ReadyMarker, "a\n", m, "b\n"}, 1, false, "a\nb\n"},
		{"two in one write", []string{ReadyMarker, "a" + m + m + "b"}, 2, false, "ab"},
		{"byte by byte", append([]string{ReadyMarker, "x"}, strings.Split(m+OOMMarker(nonce), "")...), 1, true, "x"},
		{"forged", []string{ReadyMarker, RefusedMarker("guessed", ref)}, 0, false, RefusedMarker("guessed", ref)},
		{"before ready", []string{m, ReadyMarker, "a"}, 0, false, "a"},
		{"too long", []string{ReadyMarker, long, MarkerEnd}, 0, false, long + MarkerEnd},
		{"unfinished", []string{ReadyMarker, "a", refusedPrefix(nonce) + "{"}, 0, false, "a" + refusedPrefix(nonce) + "{"},
	} {
		var out strings.Builder
		r := NewReport(&out)
		r.ExpectOOM(nonce)
		var got []Refusal
		r.ExpectRefusals(nonce, func(f Refusal) { got = append(got, f) })
		for _, w := range tc.writes {
			if _, err := r.Write([]byte(w)); err != nil {
				t.Fatal(err)
			}
		}
		if err := r.Flush(); err != nil {
			t.Fatal(err)
		}
		if len(got) != tc.got || r.OOM() != tc.oom || out.String() != tc.out {
			t.Errorf("%s: %d refusals, OOM %v, output %q; want %d, %v, %q", tc.name, len(got), r.OOM(), out.String(), tc.got, tc.oom, tc.out)
		}
		for _, f := range got {
			if f != ref {
				t.Errorf("%s: refusal %+v, want %+v", tc.name, f, ref)
			}
		}
	}
}

// TestRefusedMarkerFitsAPipeWrite: whatever the client's request line held, the init's
// report is one write a pipe takes whole (the command shares the init's stderr).
func TestRefusedMarkerFitsAPipeWrite(t *testing.T) {
	worst := strings.Repeat("\x01", 5000)
	for _, r := range []Refusal{
		{Method: worst, Host: worst, Port: 1, Path: worst, Reason: worst},
		{Method: "GET", Host: "h", Path: "/" + strings.Repeat("é", 3000), Reason: "r"},
	} {
		m := RefusedMarker("0123456789abcdef0123456789abcdef", r)
		if m == "" || len(m) > 4096 {
			t.Errorf("a refusal's marker of %d bytes, want 1 to 4096", len(m))
		}
		b, _ := EncodeRefusal(r)
		if _, ok := ParseRefusal(b); !ok {
			t.Errorf("the encoded refusal does not parse: %.80q", b)
		}
	}
}

// TestReportEnd: the session's end report is recorded and removed only with the
// session's End nonce, after the ready marker, also when it arrives in pieces; the
// command's own copy (another nonce, or before ready) is output, and records nothing.
func TestReportEnd(t *testing.T) {
	const end, oom = "e0e0e0", "0a0a0a"
	for _, tc := range []struct {
		name   string
		writes []string
		ended  bool
		out    string
	}{
		{"none", []string{ReadyMarker, "out"}, false, "out"},
		{"end", []string{ReadyMarker, "out" + EndMarker(end)}, true, "out"},
		{"split", []string{ReadyMarker + "out" + EndMarker(end)[:9], EndMarker(end)[9:]}, true, "out"},
		{"with oom", []string{ReadyMarker, "x" + OOMMarker(oom) + EndMarker(end)}, true, "x"},
		{"forged", []string{ReadyMarker, EndMarker("ffff")}, false, EndMarker("ffff")},
		{"before ready", []string{EndMarker(end), ReadyMarker, "out"}, false, "out"},
	} {
		var out strings.Builder
		r := NewReport(&out)
		r.ExpectOOM(oom)
		r.ExpectEnd(end)
		for _, w := range tc.writes {
			if _, err := r.Write([]byte(w)); err != nil {
				t.Fatal(err)
			}
		}
		if err := r.Flush(); err != nil {
			t.Fatal(err)
		}
		if r.Ended() != tc.ended || out.String() != tc.out {
			t.Errorf("%s: ended %v, output %q; want %v, %q", tc.name, r.Ended(), out.String(), tc.ended, tc.out)
		}
	}
}

// TestEndNotTheCommands: a hello carrying only End still lets the command start
// first (StartFirstArg): End is not the command's.
func TestEndNotTheCommands(t *testing.T) {
	if !(&Hello{End: "e0"}).CarriesNothing() {
		t.Error("a hello with only End carries something for the command")
	}
	for _, id := range []string{"", "A", "a/b", "a b", strings.Repeat("a", 65)} {
		if ValidSessionID(id) {
			t.Errorf("session id %q accepted", id)
		}
	}
	if !ValidSessionID("0f3a-9c") {
		t.Error("session id 0f3a-9c refused")
	}
}

// TestOneStreamIsTheCommands: a hello asking for one stream is the command's: it
// must not start before the init has read it (StartFirstArg), and the flag survives
// the frame.
func TestOneStreamIsTheCommands(t *testing.T) {
	if (&Hello{OneStream: true}).CarriesNothing() {
		t.Error("a hello with OneStream carries nothing for the command")
	}
	var buf bytes.Buffer
	if err := WriteHello(&buf, &Hello{OneStream: true}); err != nil {
		t.Fatal(err)
	}
	if got, want := buf.String()[5:], `{"one_stream":true}`; got != want {
		t.Errorf("hello payload %s, want %s", got, want)
	}
}
