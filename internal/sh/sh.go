// Package sh quotes words for a POSIX shell: every printed command line of devsandbox
// (--dry-run scripts, the pasta prologue) quotes with it.
package sh

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/devsandbox/devsandbox/internal/termsafe"
)

// Quote quotes s for a POSIX shell when it needs it: a word of letters, digits and
// "-_./:=@%+," is left as it is, anything else is single-quoted. A character a
// terminal acts on rather than shows (termsafe.Shown: an escape, a bidi override, a
// byte that is not UTF-8; a name a sandbox chose may hold one) is not written as it
// is: it becomes "$(printf '\ooo')", its bytes in octal, so the printed line shows
// it and a shell still reads the same word.
func Quote(s string) string {
	if s == "" {
		return "''"
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=@%+,", r)) {
			if termsafe.String(s) != s {
				return quoteShown(s)
			}
			return single(s)
		}
	}
	return s
}

func single(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// quoteShown quotes s, which holds characters termsafe.Shown refuses: the runs of
// shown characters single-quoted, each run of the others a printf of its octal bytes.
func quoteShown(s string) string {
	var b strings.Builder
	shown, start := 0, 0 // the current run's kind (1 shown, 2 not) and start
	flush := func(end int) {
		switch {
		case end == start:
		case shown == 1:
			b.WriteString(single(s[start:end]))
		default:
			b.WriteString(`"$(printf '`)
			for i := start; i < end; i++ {
				fmt.Fprintf(&b, `\%03o`, s[i])
			}
			b.WriteString(`')"`)
		}
		start = end
	}
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		kind := 2
		if termsafe.Shown(r) && !(r == utf8.RuneError && size == 1) {
			kind = 1
		}
		if kind != shown {
			flush(i)
			shown = kind
		}
		i += size
	}
	flush(len(s))
	return b.String()
}

// Join quotes each word of argv and joins them with spaces.
func Join(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = Quote(a)
	}
	return strings.Join(q, " ")
}
