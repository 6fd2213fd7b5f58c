package config

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/devsandbox/devsandbox/internal/keytable"
)

// docDefaults maps each key of docs/configuration.md's key table to its "type,
// default" cell.
func docDefaults(t *testing.T) map[string]string {
	t.Helper()
	rows, err := keytable.Read("../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	cells := map[string]string{}
	for _, r := range rows {
		if len(r.Cells) < 2 {
			continue
		}
		for _, m := range backticked.FindAllStringSubmatch(r.Cells[0], -1) {
			cells[strings.TrimSuffix(strings.TrimPrefix(m[1], "[["), "]]")] = r.Cells[1]
		}
	}
	return cells
}

// defaultWords are the words a cell must hold to name the default value v: a string
// or list entry in backquotes (`enforce`), a bool or a number as a word (false, 4096).
func defaultWords(v any) []string {
	switch v := v.(type) {
	case string:
		if v == "" {
			return nil
		}
		return []string{"`" + v + "`"}
	case []string:
		words := make([]string, len(v))
		for i, s := range v {
			words[i] = "`" + s + "`"
		}
		return words
	case bool, int, float64:
		return []string{fmt.Sprint(v)}
	}
	return nil
}

// TestDocsKeyTableDefaults: the key table of docs/configuration.md names the
// built-in default of every key that has one, as defaults() sets it (the home as ~,
// the user as <user>, the version as <version>, as the table writes them).
func TestDocsKeyTableDefaults(t *testing.T) {
	defer func(v string) { Version = v }(Version)
	Version = "<version>"
	c := defaults(Host{Home: "~", User: "<user>"})
	cells := docDefaults(t)
	n := 0
	for _, e := range entries(c) {
		key := strings.Join(append(append([]string{}, e.table...), e.name), ".")
		if c.Origins[key] != "default" {
			continue // no built-in default (krun.image follows docker.image once the layers are in)
		}
		cell, ok := cells[key]
		if !ok {
			t.Errorf("%s has a default but no row in the key table", key)
			continue
		}
		words := defaultWords(e.value)
		if len(words) == 0 {
			t.Errorf("%s: no way to check a default of type %T", key, e.value)
		}
		for _, w := range words {
			n++
			// A backquoted word delimits itself; a bare one must stand alone (2, not 2048).
			if !strings.Contains(cell, w) || !strings.HasPrefix(w, "`") && !regexp.MustCompile(`(^|[^\w.])`+regexp.QuoteMeta(w)+`\b`).MatchString(cell) {
				t.Errorf("%s: the key table does not name its default %s: %q", key, w, cell)
			}
		}
	}
	if n < 20 {
		t.Fatalf("checked only %d default values: is the extraction broken?", n)
	}
}
