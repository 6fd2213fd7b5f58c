package gitpush

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"
)

const (
	zero = "0000000000000000000000000000000000000000"
	idA  = "1111111111111111111111111111111111111111"
	idB  = "2222222222222222222222222222222222222222"
	z256 = "0000000000000000000000000000000000000000000000000000000000000000"
	a256 = "abcdefabcdefabcdefabcdefabcdefabcdefabcdefabcdefabcdefabcdefabcd"
)

func p(s string) string { return fmt.Sprintf("%04x%s", len(s)+4, s) }

// gitCaps is what git 2.39 asks receive-pack for.
const gitCaps = "\x00 report-status-v2 side-band-64k quiet object-format=sha1 agent=git/2.39.5"

func TestReadRequest(t *testing.T) {
	for _, tt := range []struct {
		name string
		body string
		want Request
	}{
		{"one update as git sends it", p(idA+" "+idB+" refs/heads/agent/x"+gitCaps) + "0000",
			Request{Commands: []Command{{idA, idB, "refs/heads/agent/x"}},
				Caps: []string{"report-status-v2", "side-band-64k", "quiet", "object-format=sha1", "agent=git/2.39.5"}}},
		{"create, delete, newline chomped", p(zero+" "+idA+" refs/heads/a\x00report-status\n") + p(idB+" "+zero+" refs/tags/v1\n") + "0000",
			Request{Commands: []Command{{zero, idA, "refs/heads/a"}, {idB, zero, "refs/tags/v1"}}, Caps: []string{"report-status"}}},
		{"shallow lines first", p("shallow "+idA) + p(idA+" "+idB+" refs/heads/a\n") + "0000",
			Request{Commands: []Command{{idA, idB, "refs/heads/a"}}}},
		{"sha256", p(z256+" "+a256+" refs/heads/a\x00object-format=sha256") + "0000",
			Request{Commands: []Command{{z256, a256, "refs/heads/a"}}, Caps: []string{"object-format=sha256"}}},
		{"capabilities on a later line count", p(idA+" "+idB+" refs/heads/a") + p(idA+" "+idB+" refs/heads/b\x00side-band") + "0000",
			Request{Commands: []Command{{idA, idB, "refs/heads/a"}, {idA, idB, "refs/heads/b"}}, Caps: []string{"side-band"}}},
		{"upper-case length and ids", "006A" + strings.ToUpper(idA) + " " + idB + " refs/heads/abcdefghi" + "0000",
			Request{Commands: []Command{{idA, idB, "refs/heads/abcdefghi"}}}},
		{"an empty list (git's probe)", "0000", Request{}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			const rest = "PACK\x00\x00\x00\x02rest of the body"
			r := strings.NewReader(tt.body + rest)
			req, head, err := ReadRequest(r, 1<<20)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(*req, tt.want) {
				t.Errorf("got %+v\nwant %+v", *req, tt.want)
			}
			if string(head) != tt.body {
				t.Errorf("head %q, want the command list %q", head, tt.body)
			}
			if left, _ := io.ReadAll(r); string(left) != rest {
				t.Errorf("left unread %q, want %q: the reader read past the flush", left, rest)
			}
		})
	}
}

func TestReadRequestRefuses(t *testing.T) {
	cmd := idA + " " + idB + " refs/heads/a"
	for _, tt := range []struct {
		name, body string
		class      error
	}{
		{"non-hex length", "00g1" + cmd, ErrMalformed},
		{"delim", "0001" + p(cmd) + "0000", ErrMalformed},
		{"response end", "0002", ErrMalformed},
		{"length 3", "0003", ErrMalformed},
		{"empty packet", "0004" + "0000", ErrMalformed},
		{"over 65520", "fff1" + strings.Repeat("x", 0xfff1-4), ErrMalformed},
		{"two fields", p(idA+" refs/heads/a") + "0000", ErrMalformed},
		{"short id", p(idA[1:]+" "+idB[1:]+" refs/heads/a") + "0000", ErrMalformed},
		{"ids of two lengths", p(idA+" "+a256+" refs/heads/a") + "0000", ErrMalformed},
		{"a later command with other ids", p(cmd) + p(z256+" "+a256+" refs/heads/b") + "0000", ErrMalformed},
		{"non-hex id", p("x"+idA[1:]+" "+idB+" refs/heads/a") + "0000", ErrMalformed},
		{"ref outside refs/", p(idA+" "+idB+" HEAD") + "0000", ErrMalformed},
		{"ref with ..", p(idA+" "+idB+" refs/heads/a/../main") + "0000", ErrMalformed},
		{"ref with a space", p(idA+" "+idB+" refs/heads/a b") + "0000", ErrMalformed},
		{"ref with a newline before NUL", p(idA+" "+idB+" refs/heads/a\n\x00report-status") + "0000", ErrMalformed},
		{"two newlines", p(cmd+"\n\n") + "0000", ErrMalformed},
		{"blank line", p("\n") + "0000", ErrMalformed},
		{"ERR packet", p("ERR boom") + "0000", ErrMalformed},
		{"bad shallow", p("shallow xyz") + "0000", ErrMalformed},
		{"signed push", p("push-cert\x00report-status") + p("certificate version 0.1\n") + "0000", ErrUnsupported},
		{"empty body", "", ErrTruncated},
		{"ends in the length", "00", ErrTruncated},
		{"ends in a packet", p(cmd)[:20], ErrTruncated},
		{"ends before the flush", p(cmd), ErrTruncated},
		{"ends in the flush", p(cmd) + "00", ErrTruncated},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, head, err := ReadRequest(strings.NewReader(tt.body), 1<<20)
			if !errors.Is(err, tt.class) {
				t.Fatalf("error %v, want %v", err, tt.class)
			}
			if !strings.HasPrefix(tt.body, string(head)) {
				t.Errorf("head %q is not what was read", head)
			}
		})
	}
}

func TestReadRequestBound(t *testing.T) {
	var b strings.Builder
	for i := range 100 {
		b.WriteString(p(fmt.Sprintf("%s %s refs/heads/agent/%03d", idA, idB, i)))
	}
	body := b.String() + "0000"
	if _, _, err := ReadRequest(strings.NewReader(body), len(body)); err != nil {
		t.Fatalf("a list of exactly the bound: %v", err)
	}
	_, head, err := ReadRequest(strings.NewReader(body), len(body)-1)
	if !errors.Is(err, ErrTooLarge) || len(head) > len(body)-1 {
		t.Fatalf("one byte over: %v, %d bytes read", err, len(head))
	}
}

// TestReadRequestReaderError: the body's own error (a client gone, a timeout) is
// neither a success nor mistaken for a malformed request.
func TestReadRequestReaderError(t *testing.T) {
	boom := errors.New("boom")
	r := io.MultiReader(strings.NewReader(p(idA+" "+idB+" refs/heads/a")), iotest.ErrReader(boom))
	_, _, err := ReadRequest(r, 1<<20)
	if !errors.Is(err, boom) || errors.Is(err, ErrMalformed) {
		t.Fatalf("error %v, want boom", err)
	}
	// One byte at a time, as a slow client sends it.
	req, _, err := ReadRequest(iotest.OneByteReader(strings.NewReader(p(idA+" "+idB+" refs/heads/a")+"0000")), 1<<20)
	if err != nil || len(req.Commands) != 1 {
		t.Fatalf("one byte at a time: %v, %+v", err, req)
	}
}

func TestCommandKinds(t *testing.T) {
	c := Command{Old: zero, New: idA}
	d := Command{Old: idA, New: z256[:40]}
	if !c.Create() || c.Delete() || d.Create() || !d.Delete() {
		t.Errorf("create %v/%v, delete %v/%v", c.Create(), c.Delete(), d.Create(), d.Delete())
	}
}

// FuzzReadRequest: whatever the body, ReadRequest never panics, reads at most its
// bound and only a prefix of the body; what it accepts is a command list ending in a
// flush whose refs git accepts, and reading the same bytes again gives the same list.
func FuzzReadRequest(f *testing.F) {
	f.Add([]byte(p(idA+" "+idB+" refs/heads/agent/x"+gitCaps) + "0000PACK"))
	f.Add([]byte(p("shallow "+idA) + p(zero+" "+idA+" refs/tags/v1\n") + "0000"))
	f.Add([]byte(p("push-cert\x00report-status") + "0000"))
	f.Add([]byte("0001000200030004"))
	f.Add([]byte("ffff"))
	f.Fuzz(func(t *testing.T, body []byte) {
		const max = 4096
		req, head, err := ReadRequest(bytes.NewReader(body), max)
		if len(head) > max || !bytes.HasPrefix(body, head) {
			t.Fatalf("head of %d bytes is not a prefix of the body within %d", len(head), max)
		}
		if req == nil {
			t.Fatal("nil request")
		}
		if err != nil {
			return
		}
		if !bytes.HasSuffix(head, []byte("0000")) {
			t.Fatalf("accepted %q without a closing flush", head)
		}
		for _, c := range req.Commands {
			if len(c.Old) != len(c.New) || strings.ContainsAny(c.Ref, " \x00\n") || !strings.HasPrefix(c.Ref, "refs/") {
				t.Fatalf("accepted command %+v", c)
			}
		}
		again, head2, err := ReadRequest(bytes.NewReader(head), max)
		if err != nil || !bytes.Equal(head, head2) || !reflect.DeepEqual(req, again) {
			t.Fatalf("reading the head again: %+v, %v; first %+v", again, err, req)
		}
	})
}
