package maskscan

import (
	"encoding/binary"
	"fmt"
	"path"
	"slices"
	"strings"
)

// glob is a compiled path.Match pattern: most names are rejected by comparing a
// literal prefix, without running the matcher.
type glob struct {
	pat    string
	prefix string // the text before the first metacharacter
	lit    bool   // pat has no metacharacter: only pat itself matches
}

func (g glob) match(name string) bool {
	if g.lit {
		return name == g.pat
	}
	if !strings.HasPrefix(name, g.prefix) {
		return false
	}
	ok, _ := path.Match(g.pat, name) // pat was validated by compile
	return ok
}

// matcher is a compiled Matcher.
type matcher struct {
	mask, allow []glob
	skip        []string
	mark        globSet
	// literals are the masked names that are mask globs without metacharacters,
	// and the marks without them; they are looked up by name in directories that
	// cannot be listed.
	literals []string
}

func compile(m Matcher) (*matcher, error) {
	c := &matcher{skip: m.Skip}
	for _, l := range []struct {
		globs []string
		out   *[]glob
		what  string
	}{{m.Mask, &c.mask, "mask"}, {m.Allow, &c.allow, "mask"}, {m.Mark, &c.mark.all, "mark"}} {
		for _, p := range l.globs {
			if _, err := path.Match(p, ""); err != nil {
				return nil, fmt.Errorf("%s pattern %q: %w", l.what, p, err)
			}
			g := glob{pat: p, prefix: p, lit: true}
			if i := strings.IndexAny(p, `*?[\`); i >= 0 {
				g.prefix, g.lit = p[:i], false
			}
			*l.out = append(*l.out, g)
		}
	}
	for _, g := range c.mask {
		if g.lit && c.masked(g.pat) && !slices.Contains(c.literals, g.pat) {
			c.literals = append(c.literals, g.pat)
		}
	}
	for _, g := range c.mark.all {
		if g.lit && !slices.Contains(c.literals, g.pat) {
			c.literals = append(c.literals, g.pat)
		}
	}
	c.mark.index()
	return c, nil
}

// globSet holds globs indexed by the first byte of their literal prefix, so that a
// name is compared with the few that can match it: the marks of the files host tools
// read in every directory are many, and a scan matches every name it reads.
type globSet struct {
	all     []glob
	any     []glob      // those without a literal first byte ("*.toml")
	buckets [][]glob    // by first byte, through first
	first   [256]uint16 // a byte's bucket in buckets, plus 1; 0: none
}

func (s *globSet) index() {
	for _, g := range s.all {
		if g.prefix == "" {
			s.any = append(s.any, g)
			continue
		}
		b := g.prefix[0]
		if s.first[b] == 0 {
			s.buckets = append(s.buckets, nil)
			s.first[b] = uint16(len(s.buckets))
		}
		s.buckets[s.first[b]-1] = append(s.buckets[s.first[b]-1], g)
	}
}

func (s *globSet) match(name string) bool {
	if anyMatch(s.any, name) {
		return true
	}
	if name == "" || s.first[name[0]] == 0 {
		return false
	}
	return anyMatch(s.buckets[s.first[name[0]]-1], name)
}

// masked reports whether an entry named name is masked.
func (m *matcher) masked(name string) bool {
	return anyMatch(m.mask, name) && !anyMatch(m.allow, name)
}

// marked reports whether an entry named name is reported whatever its type.
func (m *matcher) marked(name string) bool {
	return m.mark.match(name)
}

// reported reports whether an entry named name that is not a directory is reported.
func (m *matcher) reported(name string) bool {
	return m.masked(name) || m.marked(name)
}

// skipped reports whether a directory named name is not entered.
func (m *matcher) skipped(name string) bool {
	return slices.Contains(m.skip, name)
}

func anyMatch(globs []glob, name string) bool {
	for _, g := range globs {
		if g.match(name) {
			return true
		}
	}
	return false
}

// key is the canonical encoding of m, stored in the cache to tell whether it was
// written for the same matcher. Two matchers with equal keys mask the same names
// and skip the same directories.
func (m Matcher) key() []byte {
	var b []byte
	lists := [][]string{m.Mask, m.Allow, m.Skip}
	if len(m.Mark) > 0 { // without marks, the key of the format before them
		lists = append(lists, m.Mark)
	}
	for _, l := range lists {
		b = binary.AppendUvarint(b, uint64(len(l)))
		for _, s := range l {
			b = appendString(b, s)
		}
	}
	return b
}

func appendString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}
