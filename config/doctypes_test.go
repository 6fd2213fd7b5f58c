package config

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// schemaTypes is schemaKeys with each key's Go type (pointers taken off): what the
// decoder takes for it.
func schemaTypes() map[string]reflect.Type {
	types := map[string]reflect.Type{}
	walkSchema(func(key string, t reflect.Type) { types[key] = t })
	return types
}

// typeRule is how docs/configuration.md's "type, default" cell names a Go type, and
// a TOML value of another type, which the loader must refuse.
type typeRule struct {
	doc   func(cell string) bool
	words string // for the failure message
	wrong string
}

func startsWith(w string) func(string) bool {
	return func(cell string) bool { return strings.HasPrefix(cell, w) }
}

func typeRuleOf(t reflect.Type) (typeRule, bool) {
	switch {
	case t.Kind() == reflect.Bool:
		return typeRule{startsWith("bool"), `starts with "bool"`, `"yes"`}, true
	case t.Kind() == reflect.Int:
		return typeRule{func(c string) bool { return strings.Contains(c, "integer") }, `says "integer"`, `1.5`}, true
	case t.Kind() == reflect.Float64:
		return typeRule{func(c string) bool { return strings.Contains(c, "number") }, `says "number"`, `"2"`}, true
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Struct:
		return typeRule{startsWith("list of tables"), `starts with "list of tables"`, `"x"`}, true
	case t.Kind() == reflect.Slice:
		return typeRule{startsWith("list"), `starts with "list"`, `"x"`}, true
	case t.Kind() == reflect.Map:
		return typeRule{startsWith("table"), `starts with "table"`, `"x"`}, true
	case t.Kind() == reflect.String:
		notOther := func(c string) bool {
			for _, w := range []string{"bool", "list", "table", "integer", "number"} {
				if strings.HasPrefix(c, w) {
					return false
				}
			}
			return true
		}
		return typeRule{notOther, "names no other type first", `1`}, true
	}
	return typeRule{}, false
}

// TestDocsKeyTableTypes: the key table of docs/configuration.md gives each key the
// type the decoder takes (a bool "bool", a list "list", an integer "integer", ...),
// and a value of another type is refused with an error naming the key and the type
// wanted. TestDocsKeyTable checks that the rows and the keys match one for one.
func TestDocsKeyTableTypes(t *testing.T) {
	cells := docDefaults(t)
	n := 0
	for key, typ := range schemaTypes() {
		cell, ok := cells[key]
		if !ok {
			continue // TestDocsKeyTable reports it
		}
		rule, ok := typeRuleOf(typ)
		if !ok {
			t.Errorf("%s: no rule for the type %v", key, typ)
			continue
		}
		n++
		if !rule.doc(cell) {
			t.Errorf("%s is a %v, but its cell in the key table does not say so (want a cell that %s): %.80q", key, typ, rule.words, cell)
		}
		if strings.HasPrefix(key, "proxy.credentials.") {
			continue // a field of a table in a list: the list's own check covers the decoder
		}
		k := strings.ReplaceAll(key, "<name>", "claude")
		doc := fmt.Sprintf("%s = %s\n", k, rule.wrong)
		if i := strings.LastIndex(k, "."); i >= 0 {
			doc = fmt.Sprintf("[%s]\n%s = %s\n", k[:i], k[i+1:], rule.wrong)
		}
		err := loadDoc(t, doc)
		if err == nil || !strings.Contains(err.Error(), key) && !strings.Contains(err.Error(), k) || !strings.Contains(err.Error(), "expected") {
			t.Errorf("%s = %s: %v; want an error naming the key and the type expected", k, rule.wrong, err)
		}
	}
	if n < 40 {
		t.Fatalf("checked the types of only %d keys: is the extraction broken?", n)
	}
}
