package gitpush

import (
	"strings"
	"testing"
)

func refusedBecause(c Command) string {
	if c.Ref == "refs/heads/main" {
		return "refused by proxy.git_push"
	}
	return "not pushed: another ref of this push was refused"
}

func TestRefusal(t *testing.T) {
	cmds := []Command{{idA, idB, "refs/heads/main"}, {zero, idA, "refs/heads/agent/x"}}
	msgs := []string{"devsandbox: push to refs/heads/main refused", "second\nline"}
	report := p("unpack ok\n") + p("ng refs/heads/main refused by proxy.git_push\n") +
		p("ng refs/heads/agent/x not pushed: another ref of this push was refused\n") + "0000"
	band := func(n byte, s string) string { return p(string(rune(n)) + s) }
	for _, tt := range []struct {
		name string
		caps []string
		want string
		ok   bool
	}{
		{"report and side band, as git asks", []string{"report-status-v2", "side-band-64k", "quiet"},
			band(2, msgs[0]+"\n") + band(2, "second line\n") + band(1, report) + "0000", true},
		{"report only", []string{"report-status"}, report, true},
		{"side band only", []string{"side-band"},
			band(2, msgs[0]+"\n") + band(2, "second line\n") + band(3, msgs[0]+"\n") + "0000", true},
		{"neither", []string{"quiet"}, "", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			body, ok := Refusal(&Request{Commands: cmds, Caps: tt.caps}, msgs, refusedBecause)
			if ok != tt.ok || string(body) != tt.want {
				t.Errorf("got %v\n%q\nwant %v\n%q", ok, body, tt.ok, tt.want)
			}
		})
	}
}

// TestRefusalSplitsBands: side-band data longer than a packet is split at the
// negotiated size (1000 bytes for side-band), and each packet parses back.
func TestRefusalSplitsBands(t *testing.T) {
	var cmds []Command
	for i := range 40 {
		cmds = append(cmds, Command{idA, idB, "refs/heads/" + strings.Repeat("x", 50) + string(rune('a'+i%26))})
	}
	body, ok := Refusal(&Request{Commands: cmds, Caps: []string{"report-status", "side-band"}}, nil, refusedBecause)
	if !ok {
		t.Fatal("not ok")
	}
	r := &pktReader{r: strings.NewReader(string(body)), max: len(body)}
	var data strings.Builder
	for {
		kind, payload, err := r.next()
		if err != nil {
			t.Fatal(err)
		}
		if kind == packetFlush {
			break
		}
		if len(payload) > 1000-4 || payload[0] != bandData {
			t.Fatalf("packet of %d bytes on band %d", len(payload)+4, payload[0])
		}
		data.Write(payload[1:])
	}
	if !strings.HasPrefix(data.String(), p("unpack ok\n")) || strings.Count(data.String(), "ng refs/heads/") != 40 {
		t.Errorf("report reassembled: %q", data.String())
	}
}

func TestFatal(t *testing.T) {
	body, ok := Fatal(&Request{Caps: []string{"side-band-64k"}}, "devsandbox: too many refs")
	if want := p("\x03devsandbox: too many refs\n") + "0000"; !ok || string(body) != want {
		t.Errorf("got %v %q, want %q", ok, body, want)
	}
	for _, req := range []*Request{nil, {Caps: []string{"report-status"}}} {
		if body, ok := Fatal(req, "x"); ok || body != nil {
			t.Errorf("Fatal(%+v) = %q, %v without a side band", req, body, ok)
		}
	}
}
