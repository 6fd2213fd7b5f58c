package sh

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/devsandbox/devsandbox/internal/termsafe"
)

func TestQuote(t *testing.T) {
	for in, want := range map[string]string{
		"":               "''",
		"plain-word_1.0": "plain-word_1.0",
		"a=b:c@d%e+f,g":  "a=b:c@d%e+f,g",
		"two words":      "'two words'",
		"it's":           `'it'\''s'`,
		"$HOME":          "'$HOME'",
		"a\nb":           `'a'"$(printf '\012\142')"`,
		"a\n":            "'a'" + "'\n'",
		"\n\n":           "'\n\n'",
		"é":              "'é'",
		// What a terminal acts on is printed as printf's octal escapes.
		"/p/t\x1b]0;owned\a/x": `'/p/t'"$(printf '\033')"']0;owned'"$(printf '\007')"'/x'`,
		"\x1b[2K":              `"$(printf '\033')"'[2K'`,
		"bad\xff\xfe":          `'bad'"$(printf '\377\376')"`,
		"rtl\u202e'x":          `'rtl'"$(printf '\342\200\256')"''\''x'`,
		"nul\x00 and cr\r":     `'nul'"$(printf '\000')"' and cr'"$(printf '\015')"`,
		"c1\u009b31m":          `'c1'"$(printf '\302\233')"'31m'`,
		// A newline or a tab would start a line or shift what follows; the
		// character after a newline goes in its printf (a command substitution
		// drops the newlines it ends with).
		"tab\tand newline\nkept": `'tab'"$(printf '\011')"'and newline'"$(printf '\012\153')"'ept'`,
		"x\nDEVSANDBOX: ok":      `'x'"$(printf '\012\104')"'EVSANDBOX: ok'`,
		"x\n\n\u202ey":           `'x'"$(printf '\012\012\342\200\256')"'y'`,
	} {
		if got := Quote(in); got != want {
			t.Errorf("Quote(%q) = %s, want %s", in, got, want)
		}
		if got := strings.TrimRight(Quote(in), "'\n"); termsafe.Line(got) != got {
			t.Errorf("Quote(%q) = %q holds what a terminal acts on, or a line break before its end", in, got)
		}
	}
	if got := Join([]string{"echo", "hi there", ""}); got != "echo 'hi there' ''" {
		t.Errorf("Join = %s", got)
	}
}

// TestQuoteRoundTrip: a POSIX shell reads each quoted word back as it was.
func TestQuoteRoundTrip(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	for _, in := range []string{"/p/t\x1b]0;owned\a/x", "bad\xff\xfe", "rtl\u202e'x", "cr\r", "c1\u009b31m", "a\nb\n", "\x1b", "\n", "a\n\nb", "\nDEVSANDBOX", "x\n\t\ny", "é\nü", "t\tab", "\u2028\n"} {
		out, err := exec.Command(sh, "-c", "printf %s "+Quote(in)).Output()
		if err != nil || string(out) != in {
			t.Errorf("sh read %s as %q (%v), want %q", Quote(in), out, err, in)
		}
	}
}
