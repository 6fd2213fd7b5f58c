package wire

import (
	"bytes"
	"io"
	"testing"
)

// The init's answer to a stop (StopAnswer with the host's token) is taken out of the
// output and reported on Await's channel (the index of the answer), whole or split
// across writes, beside an out-of-memory report; the command's output around it
// passes unchanged, and an answer with another token is output like any other.
func TestReportAwait(t *testing.T) {
	const tok = "0123456789abcdef"
	for _, tc := range []struct {
		name   string
		writes []string
		want   string // the output
		answer int    // the index in Await's answers, -1 none
	}{
		{"whole", []string{"a" + StopAnswer(tok, StopStopped) + "b"}, "ab", 0},
		{"failed", []string{StopAnswer(tok, StopRunning)}, "", 1},
		{"ended", []string{"x" + StopAnswer(tok, StopEnded)}, "x", 2},
		{"version 1", []string{StopMarkerV1(tok, true)}, "", 3},
		{"split", []string{"a" + StopAnswer(tok, StopStopped)[:7], StopAnswer(tok, StopStopped)[7:] + "b"}, "ab", 0},
		{"byte by byte", split(StopAnswer(tok, StopEnded)), "", 2},
		{"beside the oom report", []string{OOMMarker("n") + "x" + StopAnswer(tok, StopStopped)}, "x", 0},
		{"another token", []string{StopAnswer("fedcba9876543210", StopStopped)}, StopAnswer("fedcba9876543210", StopStopped), -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			r := NewReport(&out)
			r.ExpectOOM("n")
			_, _ = r.Write([]byte(ReadyMarker))
			ch := r.Await(StopAnswer(tok, StopStopped), StopAnswer(tok, StopRunning), StopAnswer(tok, StopEnded), StopMarkerV1(tok, true))
			for _, w := range tc.writes {
				_, _ = r.Write([]byte(w))
			}
			_ = r.Flush()
			got := -1
			select {
			case got = <-ch:
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
