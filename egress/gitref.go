package egress

import (
	"fmt"
	"strings"
)

// MaxRefBytes bounds a ref name or pattern. Git sets no limit of its own; the proxy
// refuses a push naming a longer ref rather than judge a name it would cut.
const MaxRefBytes = 1024

// RefPattern is one entry of proxy.git_push: the refs a sandboxed git push may
// create, update or delete. A bare pattern names branches ("agent/*" is
// "refs/heads/agent/*"); one that starts with "refs/" is taken as written, which is
// the only way to allow a tag ("refs/tags/v*") or another namespace. "*" matches any
// run of characters, '/' included, so "agent/*" also allows "agent/x/y"; a pattern
// without "*" names one ref exactly. Matching is byte for byte, case included, as
// git compares ref names.
type RefPattern struct {
	full string
}

// ParseRefPattern parses one proxy.git_push entry. A pattern is a valid ref name (see
// CheckRefName) once each "*" stands for a character.
func ParseRefPattern(s string) (RefPattern, error) {
	if s == "" {
		return RefPattern{}, fmt.Errorf("an empty ref pattern")
	}
	full := s
	if !strings.HasPrefix(s, "refs/") {
		full = "refs/heads/" + s
	}
	if err := CheckRefName(strings.ReplaceAll(full, "*", "x")); err != nil {
		return RefPattern{}, fmt.Errorf("%q is not a ref pattern: %w", s, err)
	}
	return RefPattern{full: full}, nil
}

// String is the pattern in full ("refs/heads/agent/*").
func (p RefPattern) String() string { return p.full }

// MarshalText implements encoding.TextMarshaler: the pattern in full.
func (p RefPattern) MarshalText() ([]byte, error) { return []byte(p.full), nil }

// UnmarshalText implements encoding.TextUnmarshaler with ParseRefPattern.
func (p *RefPattern) UnmarshalText(b []byte) error {
	q, err := ParseRefPattern(string(b))
	if err == nil {
		*p = q
	}
	return err
}

// Match reports whether ref, a full ref name, is one the pattern allows.
func (p RefPattern) Match(ref string) bool { return globMatch(p.full, ref) }

// globMatch matches s against pattern, whose only special character is "*": any run
// of bytes, possibly empty. It backtracks to the last "*" only, so it is linear in
// practice and never worse than len(pattern)*len(s).
func globMatch(pattern, s string) bool {
	p, i := 0, 0
	star, mark := -1, 0
	for i < len(s) {
		switch {
		case p < len(pattern) && pattern[p] == '*':
			star, mark = p, i
			p++
		case p < len(pattern) && pattern[p] == s[i]:
			p++
			i++
		case star >= 0:
			p = star + 1
			mark++
			i = mark
		default:
			return false
		}
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}

// CheckRefName checks a full ref name by git's rules (git check-ref-format), and that
// it starts with "refs/" as receive-pack requires of a pushed ref: no component
// empty or starting with '.', none ending with ".lock"; no "..", "@{", control
// character, space, '~', '^', ':', '?', '*', '[' or '\'; not ending with '/' or '.'.
// It also refuses names longer than MaxRefBytes.
func CheckRefName(ref string) error {
	switch {
	case len(ref) > MaxRefBytes:
		return fmt.Errorf("longer than %d bytes", MaxRefBytes)
	case !strings.HasPrefix(ref, "refs/") || len(ref) == len("refs/"):
		return fmt.Errorf("a pushed ref starts with refs/ and names something below it")
	case strings.Contains(ref, ".."):
		return fmt.Errorf(`it contains ".."`)
	case strings.Contains(ref, "@{"):
		return fmt.Errorf(`it contains "@{"`)
	case strings.HasSuffix(ref, "."):
		return fmt.Errorf(`it ends with "."`)
	}
	for i := 0; i < len(ref); i++ {
		c := ref[i]
		if c < 0x20 || c == 0x7f || strings.IndexByte(" ~^:?*[\\", c) >= 0 {
			return fmt.Errorf("it contains %q", c)
		}
	}
	for comp := range strings.SplitSeq(ref, "/") {
		switch {
		case comp == "":
			return fmt.Errorf("it has an empty component")
		case comp[0] == '.':
			return fmt.Errorf("a component starts with '.'")
		case strings.HasSuffix(comp, ".lock"):
			return fmt.Errorf(`a component ends with ".lock"`)
		}
	}
	return nil
}
