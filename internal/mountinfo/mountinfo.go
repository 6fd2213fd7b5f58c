// Package mountinfo reads the lines of /proc/PID/mountinfo (proc(5)).
package mountinfo

import (
	"bytes"
	"slices"
	"strconv"
	"strings"
)

// Entry is one mount: its mount ID and its parent's (ID, Parent), the file system
// (Dev, its major:minor; FSType), the directory of it that is mounted (Root, "/" for
// all of it), where (Point), and the super block's options (SuperOpts,
// comma-separated).
type Entry struct {
	ID, Parent                          int
	Dev, Root, Point, FSType, SuperOpts string
}

// Parse returns the mounts of mountinfo's text b in its order (a later mount at the
// same place covers an earlier one); a line it cannot read is skipped.
func Parse(b []byte) []Entry {
	var es []Entry
	for len(b) > 0 {
		var line []byte
		line, b, _ = bytes.Cut(b, []byte{'\n'})
		// ID PARENT MAJ:MIN ROOT POINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPEROPTS,
		// one space apart: the kernel escapes only a space, a tab, a newline and a
		// backslash in a path, so other white space (a no-break space, a carriage
		// return) is part of it, not a separator.
		f := strings.Split(string(line), " ")
		sep := slices.Index(f, "-")
		if sep < 6 || len(f) < sep+4 {
			continue
		}
		id, err1 := strconv.Atoi(f[0])
		parent, err2 := strconv.Atoi(f[1])
		if err1 != nil || err2 != nil {
			continue
		}
		es = append(es, Entry{ID: id, Parent: parent, Dev: f[2], Root: Unescape(f[3]), Point: Unescape(f[4]), FSType: f[sep+1], SuperOpts: f[sep+3]})
	}
	return es
}

// Unescape undoes mountinfo's octal escapes (\040 for a space, \011, \012, \134).
func Unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
