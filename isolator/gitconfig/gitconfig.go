// Package gitconfig reads git configuration files the way git does, and tells which
// of their variables are safe for the host's git to obey when a sandbox wrote them.
//
// Parse follows git's own parser (config.c): sections with and without quoted
// subsections, variables after a header on the same line, quoted values with escapes,
// continuation lines, comments. Where git would refuse a file, Parse fails too; the
// caller must then treat the file as unsafe, never as empty.
package gitconfig

import (
	"errors"
	"fmt"
	"strings"
)

// ErrSyntax is wrapped by the errors of a file git would not read either.
var ErrSyntax = errors.New("bad git config syntax")

// Entry is one variable of a file: git's lowercased section and name, the
// subsection as written.
type Entry struct {
	Section, Sub, Name string
	Value              string
	Bool               bool // written without "=": true
}

// Key returns section.name or section.subsection.name.
func (e Entry) Key() string {
	if e.Sub != "" {
		return e.Section + "." + e.Sub + "." + e.Name
	}
	return e.Section + "." + e.Name
}

// Parse returns the variables of a config file, in order.
func Parse(b []byte) ([]Entry, error) {
	p := &parser{s: strings.TrimPrefix(string(b), "\xef\xbb\xbf")}
	var out []Entry
	for {
		p.skipSpace(true)
		if p.eof() {
			return out, nil
		}
		switch c := p.peek(); {
		case c == '#' || c == ';':
			p.skipLine()
		case c == '[':
			if err := p.header(); err != nil {
				return nil, err
			}
		case isAlpha(c):
			if p.section == "" {
				return nil, p.errorf("variable outside a section")
			}
			e, err := p.variable()
			if err != nil {
				return nil, err
			}
			out = append(out, e)
		default:
			return nil, p.errorf("unexpected %q", c)
		}
	}
}

type parser struct {
	s            string
	i, line      int
	section, sub string
}

func (p *parser) eof() bool  { return p.i >= len(p.s) }
func (p *parser) peek() byte { return p.s[p.i] }

func (p *parser) errorf(format string, args ...any) error {
	return fmt.Errorf("%w: line %d: %s", ErrSyntax, p.line+1, fmt.Sprintf(format, args...))
}

// skipSpace skips blanks, and newlines too when lines is set.
func (p *parser) skipSpace(lines bool) {
	for !p.eof() {
		switch p.peek() {
		case '\n':
			if !lines {
				return
			}
			p.line++
		case ' ', '\t', '\r', '\f', '\v':
		default:
			return
		}
		p.i++
	}
}

func (p *parser) skipLine() {
	for !p.eof() && p.peek() != '\n' {
		p.i++
	}
}

// header reads "[section]", "[section "sub"]" or the old "[section.sub]".
func (p *parser) header() error {
	p.i++ // '['
	start := p.i
	for !p.eof() && (isAlnum(p.peek()) || p.peek() == '-' || p.peek() == '.') {
		p.i++
	}
	name := strings.ToLower(p.s[start:p.i])
	if name == "" {
		return p.errorf("empty section name")
	}
	p.section, p.sub = name, ""
	if !p.eof() && p.peek() == ']' {
		p.i++
		if dot := strings.IndexByte(name, '.'); dot >= 0 {
			p.section, p.sub = name[:dot], name[dot+1:]
		}
		return nil
	}
	if strings.Contains(name, ".") {
		return p.errorf("section %q with a dot and a subsection", name)
	}
	p.skipSpace(false)
	if p.eof() || p.peek() != '"' {
		return p.errorf("bad section header")
	}
	p.i++
	var sub strings.Builder
	for {
		if p.eof() || p.peek() == '\n' {
			return p.errorf("unterminated subsection")
		}
		c := p.peek()
		p.i++
		if c == '"' {
			break
		}
		if c == '\\' {
			if p.eof() || p.peek() == '\n' {
				return p.errorf("unterminated subsection")
			}
			c = p.peek()
			p.i++
		}
		sub.WriteByte(c)
	}
	if p.eof() || p.peek() != ']' {
		return p.errorf("bad section header")
	}
	p.i++
	p.sub = sub.String()
	return nil
}

// variable reads "name", "name = value" up to the end of the (continued) line.
func (p *parser) variable() (Entry, error) {
	start := p.i
	for !p.eof() && (isAlnum(p.peek()) || p.peek() == '-') {
		p.i++
	}
	e := Entry{Section: p.section, Sub: p.sub, Name: strings.ToLower(p.s[start:p.i])}
	p.skipSpace(false)
	if p.eof() || p.peek() == '\n' || p.peek() == '#' || p.peek() == ';' {
		e.Bool = true
		p.skipLine()
		return e, nil
	}
	if p.peek() != '=' {
		return e, p.errorf("%s: expected '='", e.Key())
	}
	p.i++
	v, err := p.value()
	e.Value = v
	return e, err
}

// value reads a value as git does: quotes, escapes, continuations, comments, and
// unquoted blanks at the end dropped.
func (p *parser) value() (string, error) {
	p.skipSpace(false)
	var b strings.Builder
	quoted, trail := false, 0 // trail: unquoted blanks written last, dropped at the end
	for ; ; p.i++ {
		if p.eof() {
			if quoted {
				return "", p.errorf("unterminated quote")
			}
			break
		}
		c := p.peek()
		if c == '\n' {
			if quoted {
				return "", p.errorf("unterminated quote")
			}
			break
		}
		if !quoted && (c == '#' || c == ';') {
			p.skipLine()
			break
		}
		switch {
		case c == '"':
			quoted = !quoted
			trail = 0
		case c == '\\':
			p.i++
			if p.eof() {
				return "", p.errorf("backslash at the end")
			}
			switch e := p.peek(); e {
			case '\n':
				p.line++ // a continuation: the value goes on
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case 'b':
				b.WriteByte('\b')
			case '\\', '"':
				b.WriteByte(e)
			default:
				return "", p.errorf("bad escape \\%c", e)
			}
			trail = 0
		case !quoted && (c == ' ' || c == '\t'):
			b.WriteByte(c)
			trail++
		case c == '\r' && !quoted:
			// git drops a CR before the newline
		default:
			b.WriteByte(c)
			trail = 0
		}
	}
	s := b.String()
	return s[:len(s)-trail], nil
}

func isAlpha(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isAlnum(c byte) bool { return isAlpha(c) || c >= '0' && c <= '9' }

// Values returns the values of key (section.name or section.sub.name, section and
// name in any case) in es, in order; a variable written without "=" reads "true".
func Values(es []Entry, key string) []string {
	var out []string
	for _, e := range es {
		if strings.EqualFold(e.Section+"."+e.Name, key) && e.Sub == "" || e.Sub != "" && keyEqual(e, key) {
			if e.Bool {
				out = append(out, "true")
			} else {
				out = append(out, e.Value)
			}
		}
	}
	return out
}

func keyEqual(e Entry, key string) bool {
	dot, last := strings.IndexByte(key, '.'), strings.LastIndexByte(key, '.')
	if dot < 0 || dot == last {
		return false
	}
	return strings.EqualFold(key[:dot], e.Section) && key[dot+1:last] == e.Sub && strings.EqualFold(key[last+1:], e.Name)
}
