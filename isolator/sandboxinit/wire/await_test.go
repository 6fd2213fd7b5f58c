package wire

import (
	"bytes"
	"io"
	"testing"
)

// The init's answer to a stop (StopMarker with the host's token) is taken out of the
// output and reported on Await's channel, whole or split across writes, beside an
// out-of-memory report; the command's output around it passes unchanged, and an
// answer with another token is output like any other.
func TestReportAwait(t *testing.T) {
	const tok = "0123456789abcdef"
	for _, tc := range []struct {
		name   string
		writes []string
		want   string // the output
		answer int    // 1 done, 0 failed, -1 none
	}{
		{"whole", []string{"a" + StopMarker(tok, true) + "b"}, "ab", 1},
		{"failed", []string{StopMarker(tok, false)}, "", 0},
		{"split", []string{"a" + StopMarker(tok, true)[:7], StopMarker(tok, true)[7:] + "b"}, "ab", 1},
		{"byte by byte", split(StopMarker(tok, true)), "", 1},
		{"beside the oom report", []string{OOMMarker("n") + "x" + StopMarker(tok, true)}, "x", 1},
		{"another token", []string{StopMarker("fedcba9876543210", true)}, StopMarker("fedcba9876543210", true), -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			r := NewReport(&out)
			r.ExpectOOM("n")
			_, _ = r.Write([]byte(ReadyMarker))
			ch := r.Await(StopMarker(tok, true), StopMarker(tok, false))
			for _, w := range tc.writes {
				_, _ = r.Write([]byte(w))
			}
			_ = r.Flush()
			got := -1
			select {
			case ok := <-ch:
				got = 0
				if ok {
					got = 1
				}
			default:
			}
			if got != tc.answer {
				t.Errorf("answer %d, want %d", got, tc.answer)
			}
			if out.String() != tc.want {
				t.Errorf("output %q, want %q", out.String(), tc.want)
			}
		})
	}
}

func split(s string) []string {
	var out []string
	for i := range len(s) {
		out = append(out, s[i:i+1])
	}
	return out
}

// Over is closed by Flush, the end of the init's output, and only then: a caller
// waiting for an answer learns that none will come.
func TestReportOver(t *testing.T) {
	r := NewReport(io.Discard)
	select {
	case <-r.Over():
		t.Fatal("Over closed before the output ended")
	default:
	}
	_ = r.Flush()
	_ = r.Flush() // a second end changes nothing
	select {
	case <-r.Over():
	default:
		t.Fatal("Over not closed once the output ended")
	}
}
