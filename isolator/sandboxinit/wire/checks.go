package wire

import (
	"fmt"
	"strconv"
	"strings"
)

// checksHeader starts the compact form of a Manifest (EncodeChecks); no JSON value
// starts with it, so DecodeManifest tells the two forms apart by it.
const checksHeader = "checks/1\n"

// EncodeChecks returns, as the value of ManifestEnv, a Manifest that holds only
// checks and bootID (what the init verifies under bwrap), in a line form the init
// reads without encoding/json: a launch pays for every page of code and memory the
// init touches before the command starts, and JSON's reflection is most of what
// decoding costs. The form is "checks/1", then "boot ID" when bootID is set, then
// one line per check: kind, size, dev, ino, the number of Allow entries, then the
// path and each entry Go-quoted, separated by spaces.
func EncodeChecks(checks []Check, bootID string) string {
	var b strings.Builder
	b.WriteString(checksHeader)
	if bootID != "" {
		b.WriteString("boot " + strconv.Quote(bootID) + "\n")
	}
	for _, c := range checks {
		fmt.Fprintf(&b, "%s %d %d %d %d %s", strconv.Quote(string(c.Kind)), c.Size, c.Dev, c.Ino, len(c.Allow), strconv.Quote(c.Path))
		for _, a := range c.Allow {
			b.WriteString(" " + strconv.Quote(a))
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// decodeChecks parses what EncodeChecks wrote, after the header. Anything else is an
// error: the init then refuses to run the command.
func decodeChecks(s string) (*Manifest, error) {
	m := &Manifest{}
	lines := strings.Split(s, "\n")
	if lines[len(lines)-1] != "" {
		return nil, fmt.Errorf("the last line does not end")
	}
	for i, l := range lines[:len(lines)-1] {
		if rest, ok := strings.CutPrefix(l, "boot "); ok && i == 0 {
			v, rest, err := quoted(rest)
			if err != nil || rest != "" {
				return nil, fmt.Errorf("line %d: bad boot id", i+2)
			}
			m.BootID = v
			continue
		}
		c, err := decodeCheck(l)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", i+2, err)
		}
		m.Checks = append(m.Checks, c)
	}
	return m, nil
}

func decodeCheck(l string) (Check, error) {
	var c Check
	kind, l, err := quoted(l)
	if err != nil {
		return c, fmt.Errorf("bad kind: %w", err)
	}
	c.Kind = CheckKind(kind)
	var nums [4]uint64
	for i := range nums {
		f, rest, ok := strings.Cut(l, " ")
		if !ok {
			return c, fmt.Errorf("too few fields")
		}
		if nums[i], err = strconv.ParseUint(f, 10, 64); err != nil {
			return c, fmt.Errorf("bad number %q", f)
		}
		l = rest
	}
	if nums[0] > 1<<62 {
		return c, fmt.Errorf("bad size %d", nums[0])
	}
	c.Size, c.Dev, c.Ino = int64(nums[0]), nums[1], nums[2]
	if c.Path, l, err = quoted(l); err != nil {
		return c, fmt.Errorf("bad path: %w", err)
	}
	if nums[3] > uint64(len(l)) {
		return c, fmt.Errorf("too few allowed entries")
	}
	for range nums[3] {
		var a string
		if a, l, err = quoted(l); err != nil {
			return c, fmt.Errorf("bad allowed entry: %w", err)
		}
		c.Allow = append(c.Allow, a)
	}
	if l != "" {
		return c, fmt.Errorf("trailing %q", l)
	}
	return c, nil
}

// quoted reads the Go-quoted string at the start of s and returns it with the rest
// of s after one separating space (or nothing).
func quoted(s string) (string, string, error) {
	q, err := strconv.QuotedPrefix(s)
	if err != nil || !strings.HasPrefix(q, `"`) {
		return "", "", fmt.Errorf("not a quoted string")
	}
	v, err := strconv.Unquote(q)
	if err != nil {
		return "", "", err
	}
	rest := s[len(q):]
	if rest != "" {
		var ok bool
		if rest, ok = strings.CutPrefix(rest, " "); !ok || rest == "" {
			return "", "", fmt.Errorf("no separator after %s", q)
		}
	}
	return v, rest, nil
}
