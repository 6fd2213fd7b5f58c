// Package sh quotes words for a POSIX shell: every printed command line of devsandbox
// (--dry-run scripts, the pasta prologue) quotes with it.
package sh

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/devsandbox/devsandbox/internal/termsafe"
)

// Quote quotes s for a POSIX shell when it needs it: a word of letters, digits and
// "-_./:=@%+," is left as it is, anything else is single-quoted. A character a
// terminal acts on rather than shows, or that would start a line (termsafe.Line
// escapes it: an escape, a bidi override, a newline, a tab, a byte that is not UTF-8;
// a name a sandbox chose may hold one) is not written as it is: it becomes
// "$(printf '\ooo')", its bytes in octal, so the printed line shows it and a shell
// still reads the same word. A command substitution drops the newlines it ends with,
// so a newline's printf also writes the character after it; newlines that end the
// word are the one exception, written as they are inside the quotes (the line they
// start begins with the closing quote).
func Quote(s string) string { return quote(s, termsafe.Line, unicode.IsPrint) }

// QuoteText is Quote for text devsandbox made that spans lines by design (a file's
// content, the egress prologue): its newlines and tabs are written as they are.
func QuoteText(s string) string { return quote(s, termsafe.String, termsafe.Shown) }

func quote(s string, escape func(string) string, shown func(rune) bool) string {
	if s == "" {
		return "''"
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=@%+,", r)) {
			if escape(s) != s {
				return quoteShown(s, shown)
			}
			return single(s)
		}
	}
	return s
}

func single(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// quoteShown quotes s, which holds characters shown refuses: the runs of shown
// characters single-quoted, each run of the others a printf of its octal bytes (with
// the character after it when it ends with a newline).
func quoteShown(s string, shown func(rune) bool) string {
	if t := strings.TrimRight(s, "\n"); t != s && !shown('\n') {
		if t == "" {
			return single(s)
		}
		return quoteShown(t, shown) + single(s[len(t):])
	}
	var b strings.Builder
	kind, start := 0, 0 // the current run's kind (1 shown, 2 not) and start
	flush := func(end int) {
		switch {
		case end == start:
		case kind == 1:
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
		k := 2
		if shown(r) && !(r == utf8.RuneError && size == 1) && !(kind == 2 && s[i-1] == '\n') {
			k = 1
		}
		if k != kind {
			flush(i)
			kind = k
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
