package audit

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Hosts, paths, methods and reasons come from the sandbox. The renderers below never
// let one reach a terminal as a control sequence or a format character (bidi overrides
// and isolates, zero-width characters, U+2028): text output quotes a field holding
// one, JSON output escapes it as \uXXXX.

// FormatText renders r as one line for a terminal, in the local time zone loc.
func FormatText(r Record, loc *time.Location) string {
	ts := r.Time.In(loc).Format("2006-01-02 15:04:05")
	if r.kind() == KindDropped {
		what := "records"
		if r.Dropped == 1 {
			what = "record"
		}
		return fmt.Sprintf("%s %-5s %d denied %s dropped (session %s over its budget; see devsandbox logs proxy --help)",
			ts, Escape(r.Decision), r.Dropped, what, Escape(r.Session))
	}
	if r.kind() == KindPush && r.Push != nil {
		return formatPush(ts, r)
	}
	target := r.Host + ":" + strconv.Itoa(r.Port) + r.Path
	if isIPv6(r.Host) {
		target = "[" + r.Host + "]:" + strconv.Itoa(r.Port) + r.Path
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s %-5s %-7s %s", ts, Escape(r.Decision), Escape(r.Method), Escape(target))
	if r.PathBytes > 0 {
		fmt.Fprintf(&b, "…(path of %d bytes)", r.PathBytes)
	}
	fmt.Fprintf(&b, " %d %dB↑ %dB↓ %dms", r.Status, r.BytesUp, r.BytesDown, r.DurationMS)
	if r.Decision != DecisionAllow {
		fmt.Fprintf(&b, " rule=%s %s", strconv.Quote(r.Rule), Escape(r.Reason))
	}
	if r.Error != "" {
		fmt.Fprintf(&b, " error=%s", strconv.Quote(r.Error))
	}
	return b.String()
}

// formatPush renders a KindPush record: the repository, then each ref as
// "ref old→new allowed|refused" with ids shortened to 7 digits.
func formatPush(ts string, r Record) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %-5s %-7s %s", ts, Escape(r.Decision), "push", Escape(r.Push.Repo))
	for i, u := range r.Push.Refs {
		sep := ","
		if i == 0 {
			sep = ""
		}
		verdict := "refused"
		if u.Allowed {
			verdict = "allowed"
		}
		fmt.Fprintf(&b, "%s %s %s→%s %s", sep, Escape(u.Ref), Escape(shortID(u.Old)), Escape(shortID(u.New)), verdict)
	}
	if n := r.Push.RefsTotal - len(r.Push.Refs); n > 0 {
		fmt.Fprintf(&b, " (and %d more)", n)
	}
	if r.Decision != DecisionAllow {
		fmt.Fprintf(&b, " rule=%s %s", strconv.Quote(r.Rule), Escape(r.Reason))
	}
	return b.String()
}

func shortID(id string) string {
	if len(id) > 7 {
		return id[:7]
	}
	return id
}

// FormatJSON renders r as one JSON line (without the newline), with every character
// that is not printable escaped.
func FormatJSON(r Record) []byte { return encode(r) }

// Escape returns s as it is when every character is printable, else quoted with Go
// escapes (strconv.Quote), so a terminal shows the escapes, never their effect.
func Escape(s string) string {
	for _, r := range s {
		if !unicode.IsPrint(r) || r == utf8.RuneError {
			return strconv.Quote(s)
		}
	}
	return s
}

// FormatSuggestions writes the output of `devsandbox logs proxy --suggest`: a comment
// header, then each suggestion as a quoted TOML string and a comma, its warning on a
// comment line above it, then the withheld destinations as comments. Every line that
// is not a comment is an entry; nothing from the log reaches a line unescaped.
func FormatSuggestions(w io.Writer, sugg []Suggestion, held []Withheld) {
	if len(sugg) > 0 {
		fmt.Fprintln(w, "# egress.allow entries that would have permitted the denied requests, each for the")
		fmt.Fprintln(w, "# port asked (a bare host opens every port); review them, then add them to your config")
		fmt.Fprintln(w, "# (or pass --allow). A name's DNS picks its addresses: an entry opens the private (LAN)")
		fmt.Fprintln(w, "# ones too, never metadata or this host's:")
	}
	for _, s := range sugg {
		if s.Warning != "" {
			fmt.Fprintf(w, "# WARNING: %s\n", commentSafe(s.Warning))
		}
		fmt.Fprintf(w, "%s,\n", strconv.QuoteToASCII(s.Entry))
	}
	if len(held) > 0 {
		fmt.Fprintln(w, "# Denied, and not suggested:")
	}
	for _, h := range held {
		fmt.Fprintf(w, "#   %s: %s\n", commentSafe(h.Target), commentSafe(h.Why))
	}
}

// commentSafe is s with every character that is not printable ASCII escaped, so it
// cannot end a comment line or hide what follows.
func commentSafe(s string) string {
	q := strconv.QuoteToASCII(s)
	return q[1 : len(q)-1]
}
