package prestart

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"
)

// decodeJSON parses a record's stored form, as Encode writes it (json.Marshal), by
// hand: the early start reads the record before bwrap's start, and encoding/json
// spends about 0.1 ms at its first use in a process (its decoders for Record's
// types, its scanner), more than the decoding itself. It accepts a subset of what
// json.Unmarshal does, never more, and gives the same Record for it: a field name
// matches exactly and once; a number is an integer; null stands only for an empty
// list (Marshal's nil slice); a string is valid UTF-8, its \u escapes no
// surrogates (Marshal writes neither otherwise); nothing may follow the record.
// TestDecodeJSONSubset holds it to that.
func decodeJSON(b []byte) (*Record, error) {
	s := &scanner{b: b}
	var r Record
	err := s.object(func(name string) (err error) {
		switch name {
		case "Version":
			r.Version, err = s.int()
		case "Key":
			r.Key, err = s.str()
		case "Bwrap":
			r.Bwrap, err = s.str()
		case "Argv":
			err = s.list(func() error {
				v, err := s.str()
				r.Argv = append(r.Argv, v)
				return err
			})
		case "TmpBase":
			r.TmpBase, err = s.str()
		case "Env":
			err = s.list(func() error {
				e, err := s.env()
				r.Env = append(r.Env, e)
				return err
			})
		case "Files":
			err = s.list(func() error {
				f, err := s.file()
				r.Files = append(r.Files, f)
				return err
			})
		default:
			err = fmt.Errorf("unknown field %q", name)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if s.ws(); s.i != len(s.b) {
		return nil, errors.New("data after the record")
	}
	return &r, nil
}

// env reads one of Record.Env.
func (s *scanner) env() (e Env, err error) {
	err = s.object(func(name string) (err error) {
		var v string
		switch name {
		case "Name":
			e.Name, err = s.str()
		case "Kind":
			v, err = s.str()
			e.Kind = EnvKind(v)
		case "Value":
			e.Value, err = s.str()
		case "Source":
			e.Source, err = s.str()
		default:
			err = fmt.Errorf("unknown field %q", name)
		}
		return err
	})
	return e, err
}

// file reads one of Record.Files.
func (s *scanner) file() (f File, err error) {
	err = s.object(func(name string) (err error) {
		var v string
		switch name {
		case "FD":
			f.FD, err = s.int()
		case "Kind":
			v, err = s.str()
			f.Kind = FileKind(v)
		case "Path":
			f.Path, err = s.str()
		case "Content":
			if v, err = s.str(); err == nil {
				f.Content, err = base64.StdEncoding.Strict().DecodeString(v)
			}
		default:
			err = fmt.Errorf("unknown field %q", name)
		}
		return err
	})
	return f, err
}

// scanner reads the JSON values a record is made of from b, at i.
type scanner struct {
	b []byte
	i int
}

// ws skips white space.
func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// next returns the next byte after white space, 0 at the end.
func (s *scanner) next() byte {
	if s.ws(); s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

// expect consumes c, the next byte after white space.
func (s *scanner) expect(c byte) error {
	if s.next() != c {
		return fmt.Errorf("%q expected at offset %d", c, s.i)
	}
	s.i++
	return nil
}

// object reads an object, calling field for each member's name with its value next;
// a name twice is refused.
func (s *scanner) object(field func(name string) error) error {
	if err := s.expect('{'); err != nil {
		return err
	}
	if s.next() == '}' {
		s.i++
		return nil
	}
	var seen []string
	for {
		name, err := s.str()
		if err != nil {
			return err
		}
		for _, n := range seen {
			if n == name {
				return fmt.Errorf("field %q twice", name)
			}
		}
		seen = append(seen, name)
		if err := s.expect(':'); err != nil {
			return err
		}
		if err := field(name); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if s.next() == '}' {
			s.i++
			return nil
		}
		if err := s.expect(','); err != nil {
			return err
		}
	}
}

// list reads an array, calling elem for each element, or null (none).
func (s *scanner) list(elem func() error) error {
	if s.next() == 'n' {
		return s.literal("null")
	}
	if err := s.expect('['); err != nil {
		return err
	}
	if s.next() == ']' {
		s.i++
		return nil
	}
	for {
		if err := elem(); err != nil {
			return err
		}
		if s.next() == ']' {
			s.i++
			return nil
		}
		if err := s.expect(','); err != nil {
			return err
		}
	}
}

// literal consumes word.
func (s *scanner) literal(word string) error {
	if len(s.b)-s.i < len(word) || string(s.b[s.i:s.i+len(word)]) != word {
		return fmt.Errorf("%s expected at offset %d", word, s.i)
	}
	s.i += len(word)
	return nil
}

// int reads an integer (no fraction, no exponent) that fits an int.
func (s *scanner) int() (int, error) {
	s.ws()
	start := s.i
	if s.i < len(s.b) && s.b[s.i] == '-' {
		s.i++
	}
	digits := s.i
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		s.i++
	}
	n := s.b[digits:s.i]
	if len(n) == 0 || (n[0] == '0' && len(n) > 1) {
		return 0, fmt.Errorf("an integer expected at offset %d", start)
	}
	return strconv.Atoi(string(s.b[start:s.i]))
}

// str reads a string.
func (s *scanner) str() (string, error) {
	if err := s.expect('"'); err != nil {
		return "", err
	}
	start := s.i
	for s.i < len(s.b) { // the common case: no escape
		c := s.b[s.i]
		if c == '"' {
			v := string(s.b[start:s.i])
			s.i++
			if !utf8.ValidString(v) {
				return "", fmt.Errorf("a string that is not UTF-8 at offset %d", start)
			}
			return v, nil
		}
		if c == '\\' || c < 0x20 {
			break
		}
		s.i++
	}
	out := append([]byte(nil), s.b[start:s.i]...)
	for s.i < len(s.b) {
		c := s.b[s.i]
		s.i++
		switch {
		case c == '"':
			if !utf8.Valid(out) {
				return "", fmt.Errorf("a string that is not UTF-8 at offset %d", start)
			}
			return string(out), nil
		case c < 0x20:
			return "", fmt.Errorf("a control character in a string at offset %d", s.i-1)
		case c != '\\':
			out = append(out, c)
			continue
		}
		if s.i >= len(s.b) {
			break
		}
		e := s.b[s.i]
		s.i++
		switch e {
		case '"', '\\', '/':
			out = append(out, e)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			if len(s.b)-s.i < 4 {
				return "", fmt.Errorf("a short \\u escape at offset %d", s.i)
			}
			r, err := strconv.ParseUint(string(s.b[s.i:s.i+4]), 16, 16)
			if err != nil || (r >= 0xd800 && r < 0xe000) {
				return "", fmt.Errorf("a \\u escape that is not a character at offset %d", s.i)
			}
			s.i += 4
			out = utf8.AppendRune(out, rune(r))
		default:
			return "", fmt.Errorf("an unknown escape at offset %d", s.i-1)
		}
	}
	return "", errors.New("a string not ended")
}
