package termsafe

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"testing"
)

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

func TestLine(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", ""},
		{"plain /path/to/proj — ok → é 漢", "plain /path/to/proj — ok → é 漢"},
		{"x\nDEVSANDBOX: all clear", `x\x0aDEVSANDBOX: all clear`},
		{"cr\rDEVSANDBOX: all clear", `cr\x0dDEVSANDBOX: all clear`},
		{"a\tcolumn", `a\x09column`},
		{"vt\vff\f", `vt\x0bff\x0c`},
		{"nel\u0085ls\u2028ps\u2029", `nel\u0085ls\u2028ps\u2029`},
		{"lre\u202a rle\u202b pdf\u202c lro\u202d rlo\u202e", `lre\u202a rle\u202b pdf\u202c lro\u202d rlo\u202e`},
		{"lri\u2066 rli\u2067 fsi\u2068 pdi\u2069", `lri\u2066 rli\u2067 fsi\u2068 pdi\u2069`},
		{"t\x1b]0;owned\a", `t\x1b]0;owned\x07`},
		{"bad \xff", `bad \xff`},
	} {
		if got := Line(c.in); got != c.want {
			t.Errorf("Line(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestStringKeepsLines: String is for text that spans lines by design; it escapes
// the rest of what Line does.
func TestStringKeepsLines(t *testing.T) {
	in := "a\nb\tc\r\u2028\u0085\u202e"
	if got, want := String(in), "a\nb\tc"+`\x0d\u2028\u0085\u202e`; got != want {
		t.Errorf("String(%q) = %q, want %q", in, got, want)
	}
}

func TestJSON(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"a":"plain é 漢"}`, `{"a":"plain é 漢"}`},
		{"{\"a\":\"c1 \u009b2K nel \u0085\"}", `{"a":"c1 \u009b2K nel \u0085"}`},
		{"[\"\u202egnp.exe\u202c \u2066x\u2069\",\n  \"\u2028\u2029\"]", "[\"\\u202egnp.exe\\u202c \\u2066x\\u2069\",\n  \"\\u2028\\u2029\"]"},
		{"\"tag \U000E0041\"", `"tag \udb40\udc41"`},
		{"\"\xff\"", `"\ufffd"`},
	} {
		got := string(JSON([]byte(c.in)))
		if got != c.want {
			t.Errorf("JSON(%q) = %q, want %q", c.in, got, c.want)
		}
		var a, b any
		if json.Unmarshal([]byte(c.in), &a) == nil {
			if err := json.Unmarshal([]byte(got), &b); err != nil || !reflect.DeepEqual(a, b) {
				t.Errorf("JSON(%q) reads as %v (%v), want %v", c.in, b, err, a)
			}
		}
	}
}

func TestLines(t *testing.T) {
	a, b := errors.New("a\nDEVSANDBOX: all clear"), errors.New("b")
	for _, c := range []struct {
		err  error
		want []string
	}{
		{a, []string{`a\x0aDEVSANDBOX: all clear`}},
		{errors.Join(a, nil, b), []string{`a\x0aDEVSANDBOX: all clear`, "b"}},
		{errors.Join(errors.Join(a, b), b), []string{`a\x0aDEVSANDBOX: all clear`, "b", "b"}},
		// Two %w: the message is the error's own, kept whole.
		{fmt.Errorf("setting up: %w; and %w", a, b), []string{`setting up: a\x0aDEVSANDBOX: all clear; and b`}},
		{fmt.Errorf("%w: %w", b, errors.Join(a, b)), []string{`b: a\x0aDEVSANDBOX: all clear\x0ab`}},
	} {
		if got := Lines(c.err); !reflect.DeepEqual(got, c.want) {
			t.Errorf("Lines(%q) = %q, want %q", c.err, got, c.want)
		}
	}
}
