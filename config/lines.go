package config

import (
	"strconv"
	"strings"

	"github.com/pelletier/go-toml/v2/unstable"
)

// keyPos is where a dotted key's value starts in a document, and what kind it is.
type keyPos struct {
	line int
	kind unstable.Kind
}

// positions maps each dotted key in doc to its line. List entries are "key[i]" and
// array tables "key[i].field", counted in document order like the decoder does. A
// document that does not parse yields what was read before the error.
func positions(doc []byte) map[string]keyPos {
	w := posWalker{m: make(map[string]keyPos), counts: make(map[string]int)}
	w.p.Reset(doc)
	prefix := ""
	for w.p.NextExpression() {
		e := w.p.Expression()
		switch e.Kind {
		case unstable.Table:
			prefix = keyOf(e)
			w.put(prefix, w.keyLine(e), unstable.Table)
		case unstable.ArrayTable:
			k := keyOf(e)
			line := w.keyLine(e)
			w.put(k, line, unstable.Array)
			prefix = k + "[" + strconv.Itoa(w.counts[k]) + "]"
			w.counts[k]++
			w.put(prefix, line, unstable.Table)
		case unstable.KeyValue:
			w.keyValue(prefix, e)
		}
	}
	return w.m
}

// keyAt returns the dotted key, named as positions names it, of the first key-value or
// table header whose key starts on line of doc; "" when there is none. Unlike
// positions it sees a key defined a second time.
func keyAt(doc []byte, line int) string {
	w := posWalker{counts: make(map[string]int)}
	w.p.Reset(doc)
	prefix := ""
	for w.p.NextExpression() {
		e := w.p.Expression()
		key := ""
		switch e.Kind {
		case unstable.Table:
			prefix = keyOf(e)
			key = prefix
		case unstable.ArrayTable:
			k := keyOf(e)
			prefix = k + "[" + strconv.Itoa(w.counts[k]) + "]"
			w.counts[k]++
			key = prefix
		case unstable.KeyValue:
			key = join(prefix, keyOf(e))
		default:
			continue
		}
		if w.keyLine(e) == line {
			return key
		}
	}
	return ""
}

type posWalker struct {
	p      unstable.Parser
	m      map[string]keyPos
	counts map[string]int // array tables seen so far, by key
}

func (w *posWalker) put(key string, line int, kind unstable.Kind) {
	if _, ok := w.m[key]; !ok {
		w.m[key] = keyPos{line: line, kind: kind}
	}
}

func (w *posWalker) keyValue(prefix string, kv *unstable.Node) {
	key := join(prefix, keyOf(kv))
	line := w.keyLine(kv)
	v := kv.Value()
	w.put(key, line, v.Kind)
	w.value(key, line, v)
}

// value records the entries of arrays and inline tables; line is the enclosing key's,
// used for nodes without a position of their own (arrays).
func (w *posWalker) value(key string, line int, v *unstable.Node) {
	switch v.Kind {
	case unstable.Array:
		i := 0
		for it := v.Children(); it.Next(); {
			c := it.Node()
			if c.Kind == unstable.Comment {
				continue
			}
			ek := key + "[" + strconv.Itoa(i) + "]"
			cl := line
			if c.Raw.Length > 0 {
				cl = w.p.Shape(c.Raw).Start.Line
			}
			w.put(ek, cl, c.Kind)
			w.value(ek, cl, c)
			i++
		}
	case unstable.InlineTable:
		for it := v.Children(); it.Next(); {
			if c := it.Node(); c.Kind == unstable.KeyValue {
				w.keyValue(key, c)
			}
		}
	}
}

// keyLine is the line of the first part of a key-value's or table header's key.
func (w *posWalker) keyLine(n *unstable.Node) int {
	it := n.Key()
	if !it.Next() {
		return 0
	}
	return w.p.Shape(it.Node().Raw).Start.Line
}

func keyOf(n *unstable.Node) string {
	var parts []string
	for it := n.Key(); it.Next(); {
		parts = append(parts, string(it.Node().Data))
	}
	return strings.Join(parts, ".")
}

func join(prefix, key string) string {
	if prefix == "" {
		return key
	}
	return prefix + "." + key
}

// kindPhrase names a TOML value kind for messages.
func kindPhrase(k unstable.Kind) string {
	switch k {
	case unstable.String:
		return "a string"
	case unstable.Bool:
		return "a boolean"
	case unstable.Integer:
		return "an integer"
	case unstable.Float:
		return "a float"
	case unstable.Array:
		return "a list"
	case unstable.Table, unstable.InlineTable:
		return "a table"
	case unstable.LocalDate, unstable.LocalTime, unstable.LocalDateTime, unstable.DateTime:
		return "a date or time"
	}
	return ""
}
