// Package sh quotes words for a POSIX shell: every printed command line of devsandbox
// (--dry-run scripts, the pasta prologue) quotes with it.
package sh

import "strings"

// Quote quotes s for a POSIX shell when it needs it: a word of letters, digits and
// "-_./:=@%+," is left as it is, anything else is single-quoted.
func Quote(s string) string {
	if s == "" {
		return "''"
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=@%+,", r)) {
			return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
		}
	}
	return s
}

// Join quotes each word of argv and joins them with spaces.
func Join(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = Quote(a)
	}
	return strings.Join(q, " ")
}
