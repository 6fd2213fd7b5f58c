package sh

import (
	"os/exec"
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
		"a\nb":           "'a\nb'",
		"é":              "'é'",
		// What a terminal acts on is printed as printf's octal escapes.
		"/p/t\x1b]0;owned\a/x":   `'/p/t'"$(printf '\033')"']0;owned'"$(printf '\007')"'/x'`,
		"\x1b[2K":                `"$(printf '\033')"'[2K'`,
		"bad\xff\xfe":            `'bad'"$(printf '\377\376')"`,
		"rtl\u202e'x":            `'rtl'"$(printf '\342\200\256')"''\''x'`,
		"nul\x00 and cr\r":       `'nul'"$(printf '\000')"' and cr'"$(printf '\015')"`,
		"c1\u009b31m":            `'c1'"$(printf '\302\233')"'31m'`,
		"tab\tand newline\nkept": "'tab\tand newline\nkept'",
	} {
		if got := Quote(in); got != want {
			t.Errorf("Quote(%q) = %s, want %s", in, got, want)
		}
		if got := Quote(in); termsafe.String(got) != got {
			t.Errorf("Quote(%q) = %q holds what a terminal acts on", in, got)
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
	for _, in := range []string{"/p/t\x1b]0;owned\a/x", "bad\xff\xfe", "rtl\u202e'x", "cr\r", "c1\u009b31m", "a\nb\n", "\x1b"} {
		out, err := exec.Command(sh, "-c", "printf %s "+Quote(in)).Output()
		if err != nil || string(out) != in {
			t.Errorf("sh read %s as %q (%v), want %q", Quote(in), out, err, in)
		}
	}
}
