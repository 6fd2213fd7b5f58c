package config

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/devsandbox/devsandbox/internal/keytable"
)

// enumCell is the start of a key table cell that lists a key's values, each maybe
// with a note in parentheses: "`enforce` \| `auto` \| `off`; ...", "`session` (a dir
// under the state dir) \| `tmpfs` \| ...".
var enumCell = regexp.MustCompile("^(`[^`]+`(?:\\s*\\([^)]*\\))?(?:\\s*\\\\\\|\\s*`[^`]+`(?:\\s*\\([^)]*\\))?)+)")

// parenthetical is a note in parentheses, whose words are not values.
var parenthetical = regexp.MustCompile(`\([^)]*\)`)

// notOneOf is the loader's message for a value outside an enum (oneOf).
var notOneOf = regexp.MustCompile(`is not one of ([a-z, ]+)$`)

// loadValue loads a file setting the dotted key to the string v ("<name>" in a key
// is a tool's name).
func loadValue(t *testing.T, key, v string) error {
	t.Helper()
	key = strings.ReplaceAll(key, "<name>", "claude")
	doc := fmt.Sprintf("%s = %q\n", key, v)
	if i := strings.LastIndex(key, "."); i >= 0 {
		doc = fmt.Sprintf("[%s]\n%s = %q\n", key[:i], key[i+1:], v)
	}
	return loadDoc(t, doc)
}

func loadDoc(t *testing.T, doc string) error {
	t.Helper()
	home, environ := testHome(t)
	host, err := HostFromEnviron(environ, 1000, 1000)
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = LoadFile(writeFile(t, home+"/example.toml", doc), host)
	return err
}

// TestDocsKeyTableValues: where docs/configuration.md's key table lists a key's
// values (`a` \| `b`), they are exactly the values the loader accepts: each one
// loads, and the loader's refusal of another value names the same list.
func TestDocsKeyTableValues(t *testing.T) {
	rows, err := keytable.Read("../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range rows {
		if len(r.Cells) < 2 {
			continue
		}
		m := enumCell.FindStringSubmatch(r.Cells[1])
		if m == nil {
			continue
		}
		var documented []string
		for _, w := range backticked.FindAllStringSubmatch(parenthetical.ReplaceAllString(m[1], ""), -1) {
			documented = append(documented, w[1])
		}
		for _, k := range backticked.FindAllStringSubmatch(r.Cells[0], -1) {
			key := k[1]
			n++
			for _, v := range documented {
				if err := loadValue(t, key, v); err != nil {
					t.Errorf("%s = %q, documented as a value, is refused: %v", key, v, err)
				}
			}
			err := loadValue(t, key, "no-such-value")
			mm := notOneOf.FindStringSubmatch(fmt.Sprint(err))
			if mm == nil {
				t.Errorf("%s = \"no-such-value\": %v; want the loader's list of values", key, err)
				continue
			}
			accepted := strings.Split(mm[1], ", ")
			if !sameSet(accepted, documented) {
				t.Errorf("%s: the key table lists %q, the loader accepts %q", key, documented, accepted)
			}
		}
	}
	if n < 8 {
		t.Fatalf("checked the values of only %d keys: is the extraction broken?", n)
	}
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}
