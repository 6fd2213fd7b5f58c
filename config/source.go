package config

import (
	"bytes"
	"errors"
	"reflect"
	"strconv"
	"strings"

	"github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"
)

// source is where a layer came from: a file (with its text, to find lines) or a flag
// or variable.
type source struct {
	file string // the file path; "" when the layer is not a file
	name string // the origin recorded in Config.Origins
	doc  []byte
	pos  map[string]keyPos // built on the first error only
}

func fileSource(path string, doc []byte) *source {
	return &source{file: path, name: path, doc: doc}
}

func flagSource(name string) *source { return &source{name: name} }

// fail returns the *Error for key. idx >= 0 names an entry of the list at key: the
// line is the entry's own, while Error.Key stays the list's key.
func (s *source) fail(key string, idx int, cause error) error {
	if s.file == "" {
		return &Error{Source: s.name, Key: key, Err: cause}
	}
	at := key
	if idx >= 0 {
		at = key + "[" + strconv.Itoa(idx) + "]"
	}
	line, _ := s.lookup(at)
	return &Error{File: s.file, Line: line, Key: key, Err: cause}
}

// lookup returns where key (or, failing that, its nearest enclosing key) is in the
// document: the line and the kind of its value.
func (s *source) lookup(key string) (int, unstable.Kind) {
	if s.pos == nil {
		s.pos = positions(s.doc)
	}
	for key != "" {
		if p, ok := s.pos[key]; ok {
			return p.line, p.kind
		}
		i := strings.LastIndexAny(key, ".[")
		if i < 0 {
			break
		}
		key = key[:i]
	}
	return 0, unstable.Invalid
}

// exactLine returns the line of the first of keys the document defines itself (not
// through an enclosing key); 0 when none is, or the source is not a file.
func (s *source) exactLine(keys ...string) int {
	if s.file == "" {
		return 0
	}
	if s.pos == nil {
		s.pos = positions(s.doc)
	}
	for _, k := range keys {
		if p, ok := s.pos[k]; ok {
			return p.line
		}
	}
	return 0
}

// decodeFile strictly decodes doc, read from path, into a layer.
func decodeFile(path string, doc []byte) (*layer, *source, error) {
	src := fileSource(path, doc)
	var l layer
	err := toml.NewDecoder(bytes.NewReader(doc)).DisallowUnknownFields().Decode(&l)
	if err == nil {
		return &l, src, nil
	}
	var strict *toml.StrictMissingError
	var de *toml.DecodeError
	switch {
	case errors.As(err, &strict):
		errs := make([]error, 0, len(strict.Errors))
		for i := range strict.Errors {
			e := &strict.Errors[i]
			line, _ := e.Position()
			errs = append(errs, &Error{File: path, Line: line, Key: strings.Join(e.Key(), "."), Err: unknownKey(e.Key())})
		}
		if len(errs) == 1 {
			return nil, nil, errs[0]
		}
		return nil, nil, errors.Join(errs...)
	case errors.As(err, &de):
		line, _ := de.Position()
		key := strings.Join(de.Key(), ".")
		var cause error
		if msg := strings.TrimPrefix(de.Error(), "toml: "); strings.HasPrefix(msg, "cannot decode TOML") {
			_, got := src.lookup(key)
			cause = wrongType(de.Key(), got)
		} else if full := keyAt(doc, line); full != "" && duplicate(msg) {
			// The decoder names only the last part of the key ("mode"): name it whole,
			// and where it was first.
			key = full
			cause = invalidf("%s", msg)
			if first, _ := src.lookup(full); first > 0 && first < line {
				cause = invalidf("defined again: first at line %d; a key or table may appear once in a file", first)
			}
		} else {
			cause = invalidf("%s", msg)
		}
		return nil, nil, &Error{File: path, Line: line, Key: key, Err: cause}
	}
	return nil, nil, &Error{File: path, Err: err}
}

// duplicate reports whether a decoder message is about a key or table defined twice.
func duplicate(msg string) bool {
	return strings.HasSuffix(msg, " is already defined") || strings.HasSuffix(msg, " already exists")
}

// unknownKey explains an unknown key and lists the keys its table allows.
func unknownKey(key []string) error {
	if len(key) == 0 {
		return invalidf("unknown key")
	}
	parent := key[:len(key)-1]
	t := schemaType(parent)
	if t == nil || elem(t).Kind() != reflect.Struct {
		return invalidf("unknown key")
	}
	t = elem(t)
	var names []string
	for i := range t.NumField() {
		if tag := t.Field(i).Tag.Get("toml"); tag != "" {
			names = append(names, tag)
		}
	}
	where := "the top level"
	if len(parent) > 0 {
		where = "[" + strings.Join(parent, ".") + "]"
	}
	return invalidf("unknown key; %s allows %s", where, strings.Join(names, ", "))
}

// wrongType explains a value of the wrong type at key; got is the kind found in the
// document, Invalid when unknown.
func wrongType(key []string, got unstable.Kind) error {
	want := describe(schemaType(key))
	if want == "" {
		return invalidf("wrong type")
	}
	if g := kindPhrase(got); g != "" && !(got == unstable.Array && strings.HasPrefix(want, "a list")) {
		return invalidf("expected %s, not %s", want, g)
	}
	return invalidf("expected %s", want)
}

// schemaType returns the Go type the layer schema holds at key, nil if none.
func schemaType(key []string) reflect.Type {
	t := reflect.TypeFor[layer]()
	for _, part := range key {
		t = elem(t)
		switch t.Kind() {
		case reflect.Map:
			t = t.Elem()
		case reflect.Struct:
			f, ok := fieldByTag(t, part)
			if !ok {
				return nil
			}
			t = f.Type
		default:
			return nil
		}
	}
	return t
}

// elem looks through pointers and, as TOML array tables do, through lists of tables.
func elem(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer || (t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Struct) {
		t = t.Elem()
	}
	return t
}

func fieldByTag(t reflect.Type, tag string) (reflect.StructField, bool) {
	for i := range t.NumField() {
		if f := t.Field(i); f.Tag.Get("toml") == tag {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

// describe names the TOML type of a schema type for messages.
func describe(t reflect.Type) string {
	if t == nil {
		return ""
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Float64:
		return "a number"
	case reflect.Int:
		return "an integer"
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Struct {
			return "a list of tables"
		}
		return "a list of strings"
	case reflect.Map:
		if t.Elem().Kind() == reflect.Struct {
			return "a table of tables"
		}
		return "a table of strings"
	case reflect.Struct:
		return "a table"
	}
	return ""
}
