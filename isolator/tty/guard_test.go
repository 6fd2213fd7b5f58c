package tty

import "testing"

// The guard reads the output in whatever pieces it comes, and tells a query from
// a sequence the terminal does not answer.
func TestScreenGuard(t *testing.T) {
	for _, tc := range []struct {
		name, out, resets string
		queried           bool
		da1               int
	}{
		{"plain text", "hello\r\n", "", false, 0},
		{"set then reset", "\x1b[?1049h\x1b[?1049l\x1b[?25l\x1b[?25h", "", false, 0},
		{"several modes in one sequence", "\x1b[?1000;1006h", "\x1b[?1000l\x1b[?1006l", false, 0},
		{"a full reset forgets", "\x1b[?2004h\x1b=\x1bc", "", false, 0},
		{"a soft reset forgets", "\x1b[?1h\x1b[!p", "", false, 0},
		{"untracked modes are left alone", "\x1b[?12h\x1b[4h", "", false, 0},
		{"attributes left set", "\x1b[1;31mred", "\x1b[m", false, 0},
		{"attributes reset", "\x1b[1;31mred\x1b[0m", "", false, 0},
		{"kitty keyboard pushed twice, popped once", "\x1b[>1u\x1b[>3u\x1b[<u", "\x1b[<1u", false, 0},
		{"cursor position report", "\x1b[6n", "", true, 0},
		{"primary device attributes", "\x1b[c\x1b[0c", "", true, 2},
		{"secondary device attributes", "\x1b[>c", "", true, 0},
		{"title report", "\x1b[21t", "", true, 0},
		{"colour query, BEL", "\x1b]11;?\x07", "", true, 0},
		{"colour query, ST", "\x1b]10;?\x1b\\", "", true, 0},
		{"a title is no query", "\x1b]2;title\x07", "", false, 0},
		{"DECRQSS", "\x1bP$qm\x1b\\", "", true, 0},
		{"DECRQM", "\x1b[?2004$p", "", true, 0},
		{"XTVERSION", "\x1b[>q", "", true, 0},
		{"ENQ", "\x05", "", true, 0},
		{"an ESC ends a string: the mode is set", "\x1b]2;\x1b[?1049h\x07", "\x1b[?1049l", false, 0},
	} {
		// Whole, and a byte at a time.
		for _, split := range []bool{false, true} {
			var g screenGuard
			if split {
				for i := range len(tc.out) {
					g.observe([]byte{tc.out[i]})
				}
			} else {
				g.observe([]byte(tc.out))
			}
			if got := string(g.resets()); got != tc.resets || g.queried != tc.queried || g.da1 != tc.da1 {
				t.Errorf("%s (split %v): resets %q queried %v da1 %d, want %q %v %d", tc.name, split, got, g.queried, g.da1, tc.resets, tc.queried, tc.da1)
			}
		}
	}
}

func TestDA1Answers(t *testing.T) {
	var d da1Answers
	for _, p := range []string{"x\x1b[?62;", "22c\x1b[>1;2c\x1b[5;1R\x1b[?1;2c"} {
		d.observe([]byte(p))
	}
	if d.n != 2 {
		t.Errorf("counted %d DA1 answers, want 2", d.n)
	}
}
