package config

import (
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/devsandbox/devsandbox/internal/keytable"
)

// walkSchema walks the layer struct's toml tags and calls visit with each key the
// decoder accepts and its Go type (pointers taken off). A table of tables (tools) is
// "tools.<name>.enabled"; an array of tables gives its own key ("proxy.credentials")
// and its fields' ("proxy.credentials.host").
func walkSchema(visit func(key string, t reflect.Type)) {
	var walk func(t reflect.Type, prefix string)
	walk = func(t reflect.Type, prefix string) {
		for i := range t.NumField() {
			f := t.Field(i)
			tag := f.Tag.Get("toml")
			if tag == "" || !f.IsExported() {
				continue
			}
			key := join(prefix, tag)
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			switch {
			case ft.Kind() == reflect.Struct:
				walk(ft, key)
			case ft.Kind() == reflect.Map && ft.Elem().Kind() == reflect.Struct:
				walk(ft.Elem(), key+".<name>")
			case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct:
				visit(key, ft)
				walk(ft.Elem(), key)
			default:
				visit(key, ft)
			}
		}
	}
	walk(reflect.TypeFor[layer](), "")
}

// schemaKeys is the keys the decoder accepts, in the layer struct's order.
func schemaKeys() []string {
	var keys []string
	walkSchema(func(key string, _ reflect.Type) { keys = append(keys, key) })
	return keys
}

// projectClass is what a project file may do with a schema key, as the docs say it.
func projectClass(key string) string {
	for _, k := range userOnly {
		if key == k.key || strings.HasPrefix(key, k.key+".") {
			return "no"
		}
	}
	for _, k := range stricter {
		if key == k.key {
			return "stricter only"
		}
	}
	if strings.HasPrefix(key, "tools.<name>.") || key == "proxy.git_push" { // see checkProject
		return "stricter only"
	}
	return "any"
}

// TestProjectRulesNameSchemaKeys guards the rule tables against typos.
func TestProjectRulesNameSchemaKeys(t *testing.T) {
	keys := schemaKeys()
	for _, k := range userOnly {
		if !slices.Contains(keys, k.key) {
			t.Errorf("userOnly names %q, not a schema key", k.key)
		}
	}
	for _, k := range stricter {
		if !slices.Contains(keys, k.key) {
			t.Errorf("stricter names %q, not a schema key", k.key)
		}
	}
}

var backticked = regexp.MustCompile("`([^`]+)`")

// TestDocsKeyTable checks docs/configuration.md's key table against the schema: every
// key the decoder accepts is documented, nothing else is, and the "project file"
// column says what checkProject does.
func TestDocsKeyTable(t *testing.T) {
	rows, err := keytable.Read("../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]string{} // key -> project file column
	for _, r := range rows {
		if len(r.Cells) != 4 {
			t.Errorf("row with %d columns, want 4: %s", len(r.Cells), r.Text)
			continue
		}
		for _, m := range backticked.FindAllStringSubmatch(r.Cells[0], -1) {
			key := strings.TrimSuffix(strings.TrimPrefix(m[1], "[["), "]]")
			documented[key] = r.Cells[3]
		}
	}
	if len(documented) == 0 {
		t.Fatal("no keys in the key table of docs/configuration.md: is the extraction broken?")
	}
	var missing, extra []string
	keys := schemaKeys()
	for _, k := range keys {
		col, ok := documented[k]
		if !ok {
			missing = append(missing, k)
		} else if want := projectClass(k); col != want {
			t.Errorf("docs say %q for %s in a project file, the code says %q", col, k, want)
		}
	}
	for k := range documented {
		if !slices.Contains(keys, k) {
			extra = append(extra, k)
		}
	}
	slices.Sort(extra)
	if len(missing) > 0 || len(extra) > 0 {
		t.Errorf("docs/configuration.md key table out of date:\n  missing: %q\n  not in the schema: %q", missing, extra)
	}
}
