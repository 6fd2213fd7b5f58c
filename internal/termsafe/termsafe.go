// Package termsafe makes text that may hold names a sandbox chose safe to print on
// the user's terminal.
//
// devsandbox's own messages name files the sandbox made: a nested repository it
// quarantined, a toolchain file it created, the other link of a masked file. A name
// may hold any byte but '/' and NUL, so without this an escape sequence in it would
// reach the terminal inside a message the user trusts: OSC 52 writes the clipboard,
// CSI sequences erase the warning itself or move the cursor over it, a title report
// is answered into the shell. String writes each character a terminal acts on as its
// Go escape, so the terminal shows it and does nothing.
//
// Not guaranteed: a newline and a tab are kept (messages span lines), so a name
// holding a newline can still start a line of its own.
package termsafe

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// String returns s with every character a terminal would act on rather than show
// written as its Go escape: C0 controls but newline and tab (ESC as \x1b, BEL as \x07,
// carriage return as \x0d), DEL, C1 controls (\u009b, an 8-bit CSI), format
// characters (bidi overrides and isolates, zero-width characters), line and
// paragraph separators, other characters unicode.IsPrint refuses, and bytes that are
// not UTF-8 (\xff). s is returned as it is when it holds none.
func String(s string) string {
	i := firstUnsafe(s)
	if i < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	b.WriteString(s[:i])
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case safe(r):
			b.WriteString(s[i : i+size])
		case r < 0x80:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r <= 0xFFFF:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			fmt.Fprintf(&b, `\U%08x`, r)
		}
		i += size
	}
	return b.String()
}

// firstUnsafe is the index of the first character of s String escapes, or -1.
func firstUnsafe(s string) int {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf { // the common case: ASCII
			if c != '\n' && c != '\t' && (c < 0x20 || c == 0x7f) {
				return i
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 || !safe(r) {
			return i
		}
		i += size
	}
	return -1
}

func safe(r rune) bool { return Shown(r) }

// Shown reports whether a terminal shows r rather than acting on it; newline and tab
// count as shown. A caller decoding text itself must treat an invalid byte (decoded
// as utf8.RuneError of size 1) as not shown: Shown(utf8.RuneError) is true, for the
// character U+FFFD itself.
func Shown(r rune) bool {
	return r == '\n' || r == '\t' || unicode.IsPrint(r)
}
