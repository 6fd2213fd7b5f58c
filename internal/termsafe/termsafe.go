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
// Line goes further, for a message, a name or a table cell: it escapes newline and
// tab too, so a name holding a newline cannot start a line of its own ("x\nDEVSANDBOX:
// all clear") and one holding a tab cannot shift a table's columns. Every warning and
// error devsandbox prints is one Line; String is for text that spans lines by
// design (a --dry-run script, whose names are quoted by package sh). JSON does the
// same for a JSON text: a consumer reads the same values, a terminal shows escapes.
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
func String(s string) string { return escape(s, Shown) }

// Line is String with newline and tab escaped too (\x0a, \x09): what it returns is
// one line, whatever s holds.
func Line(s string) string { return escape(s, unicode.IsPrint) }

func escape(s string, safe func(rune) bool) string {
	i := firstUnsafe(s, safe)
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

// firstUnsafe is the index of the first character of s that safe refuses (or a byte
// that is not UTF-8), or -1.
func firstUnsafe(s string, safe func(rune) bool) int {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf { // the common case: ASCII
			if (c < 0x20 || c == 0x7f) && !safe(rune(c)) {
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

// Shown reports whether a terminal shows r rather than acting on it; newline and tab
// count as shown. A caller decoding text itself must treat an invalid byte (decoded
// as utf8.RuneError of size 1) as not shown: Shown(utf8.RuneError) is true, for the
// character U+FFFD itself.
func Shown(r rune) bool {
	return r == '\n' || r == '\t' || unicode.IsPrint(r)
}

// JSON rewrites the non-ASCII characters of the JSON text b that Line would escape as
// \uXXXX escapes (a surrogate pair above U+FFFF): C1 controls, bidi overrides and
// isolates, zero-width characters, U+2028 and U+2029. encoding/json escapes the ASCII
// ones already (and writes a byte that is not UTF-8 as U+FFFD); such characters occur
// only inside strings, so a consumer reads the same values. b is returned as it is
// when it holds none.
func JSON(b []byte) []byte {
	var out []byte
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r < utf8.RuneSelf || unicode.IsPrint(r) && !(r == utf8.RuneError && size == 1) {
			if out != nil {
				out = append(out, b[i:i+size]...)
			}
			i += size
			continue
		}
		if out == nil {
			out = append(make([]byte, 0, len(b)+16), b[:i]...)
		}
		switch {
		case r == utf8.RuneError && size == 1:
			out = append(out, `\ufffd`...) // not from encoding/json, which never writes one
		case r > 0xFFFF:
			r -= 0x10000
			out = fmt.Appendf(out, `\u%04x\u%04x`, 0xD800+(r>>10)&0x3FF, 0xDC00+r&0x3FF)
		default:
			out = fmt.Appendf(out, `\u%04x`, r)
		}
		i += size
	}
	if out == nil {
		return b
	}
	return out
}

// Lines returns the message of err as lines, each a Line: one per error that
// errors.Join joined (at the top, and within those), else one. A newline in a message
// is a name's, never devsandbox's: devsandbox's own messages are one line each. An
// error that wraps several but words its own message (fmt.Errorf with two %w) is one
// line, its message whole.
func Lines(err error) []string {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var parts []error
		var msgs []string
		for _, e := range j.Unwrap() {
			if e != nil {
				parts, msgs = append(parts, e), append(msgs, e.Error())
			}
		}
		if len(parts) > 0 && strings.Join(msgs, "\n") == err.Error() {
			var out []string
			for _, e := range parts {
				out = append(out, Lines(e)...)
			}
			return out
		}
	}
	return []string{Line(err.Error())}
}
