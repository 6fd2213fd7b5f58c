package termsafe

import "testing"

func TestString(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", ""},
		{"plain /path/to/proj — ok → é 漢", "plain /path/to/proj — ok → é 漢"},
		{"two\nlines\tand a tab", "two\nlines\tand a tab"},
		{"t\x1b]0;owned\a/rust-toolchain.toml", `t\x1b]0;owned\x07/rust-toolchain.toml`},
		{"h\x1b]52;c;b3duZWQ=\x1b\\", `h\x1b]52;c;b3duZWQ=\x1b\`},
		{"erase\r\x1b[2K\x1b[1A", `erase\x0d\x1b[2K\x1b[1A`},
		{"del\x7f nul\x00", `del\x7f nul\x00`},
		{"c1 \u009b31m csi", `c1 \u009b31m csi`},
		{"bidi \u202egnp.exe\u202c", `bidi \u202egnp.exe\u202c`},
		{"zero\u200bwidth \u2028sep", `zero\u200bwidth \u2028sep`},
		{"tag \U000E0041", `tag \U000e0041`},
		{"bad \xff\xfe utf-8", `bad \xff\xfe utf-8`},
		{"replacement \uFFFD kept", "replacement \uFFFD kept"},
	} {
		if got := String(c.in); got != c.want {
			t.Errorf("String(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestStringUnchangedIsSame(t *testing.T) {
	s := "devsandbox: warning: nothing to escape here"
	if got := String(s); got != s {
		t.Fatalf("String changed %q to %q", s, got)
	}
}
