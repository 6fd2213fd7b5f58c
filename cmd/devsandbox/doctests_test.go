package main

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// docTestName is a test or benchmark named in prose: TestXxx, BenchmarkXxx, with a
// trailing * when the page means every test with that prefix. What precedes it
// tells a pattern apart: after RUN= or -run the name is a -run regexp, a prefix too.
var docTestName = regexp.MustCompile(`(RUN='?|-run[ =]'?)?\b((?:Test|Benchmark|Fuzz)[A-Z][A-Za-z0-9_]*)(\*?)`)

// goTestFunc is the declaration of a test, benchmark or fuzz target.
var goTestFunc = regexp.MustCompile(`(?m)^func ((?:Test|Benchmark|Fuzz)[A-Za-z0-9_]*)\(`)

// definedTests returns the names of the test, benchmark and fuzz functions of every
// _test.go file under root.
func definedTests(root string) (map[string]bool, error) {
	out := map[string]bool{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("reading tests: %w", err)
		}
		for _, m := range goTestFunc.FindAllSubmatch(b, -1) {
			out[string(m[1])] = true
		}
		return nil
	})
	return out, err
}

// missingTests returns, for the Markdown file at page, each test name it gives that
// no function in defined has (for a prefix, that no function starts with), and how
// many names it gives.
func missingTests(page string, defined map[string]bool) ([]string, int, error) {
	b, err := os.ReadFile(page)
	if err != nil {
		return nil, 0, fmt.Errorf("reading test names: %w", err)
	}
	var missing []string
	n := 0
	for i, line := range strings.Split(string(b), "\n") {
		for _, m := range docTestName.FindAllStringSubmatch(line, -1) {
			name, prefix := m[2], m[1] != "" || m[3] == "*"
			n++
			found := defined[name]
			for d := range defined {
				if found || !prefix {
					break
				}
				found = strings.HasPrefix(d, name)
			}
			if !found {
				missing = append(missing, fmt.Sprintf("%s:%d: %s%s: no such test in any _test.go file", page, i+1, name, m[3]))
			}
		}
	}
	return missing, n, nil
}

// TestDocTestNamesExist: every test the documentation cites as evidence exists, so
// a renamed or removed test cannot leave a page pointing at nothing.
func TestDocTestNamesExist(t *testing.T) {
	defined, err := definedTests("../..")
	if err != nil {
		t.Fatal(err)
	}
	pages, err := filepath.Glob("../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	pages = append([]string{"../../README.md"}, pages...)
	total := 0
	for _, p := range pages {
		missing, n, err := missingTests(p, defined)
		if err != nil {
			t.Fatal(err)
		}
		total += n
		for _, m := range missing {
			t.Error(m)
		}
	}
	if len(defined) < 300 || total < 100 {
		t.Fatalf("%d tests defined, %d named in %d pages: is the extraction broken?", len(defined), total, len(pages))
	}
}

// TestDocTestNamesCatchRenames: the check above reports a name no test has, and
// keeps exact names, * prefixes and -run patterns that match, so it cannot pass
// vacuously.
func TestDocTestNamesCatchRenames(t *testing.T) {
	page := filepath.Join(t.TempDir(), "page.md")
	content := "ok: `TestAlpha`, `TestBeta*`, `make integration RUN=TestGam`, `go test -run TestGam`, BenchmarkDelta\n" +
		"bad: `TestAlphaRenamed`\n" +
		"bad: `TestGam` (no prefix meant), `TestZeta*`\n" +
		"bad: `integration/TestEpsilon`\n"
	if err := os.WriteFile(page, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	defined := map[string]bool{"TestAlpha": true, "TestBetaOne": true, "TestGamma": true, "BenchmarkDelta": true}
	missing, n, err := missingTests(page, defined)
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(missing)
	want := []string{
		page + ":2: TestAlphaRenamed: no such test in any _test.go file",
		page + ":3: TestGam: no such test in any _test.go file",
		page + ":3: TestZeta*: no such test in any _test.go file",
		page + ":4: TestEpsilon: no such test in any _test.go file",
	}
	if n != 9 || strings.Join(missing, "\n") != strings.Join(want, "\n") {
		t.Errorf("%d names, missing:\n%s\nwant 9 names, missing:\n%s", n, strings.Join(missing, "\n"), strings.Join(want, "\n"))
	}
}
