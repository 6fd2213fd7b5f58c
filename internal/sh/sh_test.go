package sh

import "testing"

func TestQuote(t *testing.T) {
	for in, want := range map[string]string{
		"":               "''",
		"plain-word_1.0": "plain-word_1.0",
		"a=b:c@d%e+f,g":  "a=b:c@d%e+f,g",
		"two words":      "'two words'",
		"it's":           `'it'\''s'`,
		"$HOME":          "'$HOME'",
		"a\nb":           "'a\nb'",
	} {
		if got := Quote(in); got != want {
			t.Errorf("Quote(%q) = %s, want %s", in, got, want)
		}
	}
	if got := Join([]string{"echo", "hi there", ""}); got != "echo 'hi there' ''" {
		t.Errorf("Join = %s", got)
	}
}
