package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/devsandbox/devsandbox/config"
)

// counterExampleMark, on the line above a ```toml fence, marks an example that shows
// what devsandbox refuses: it must fail `config validate`, so it stays a
// counter-example.
const counterExampleMark = "<!-- counter-example -->"

// tomlExample is one fenced ```toml block of a Markdown page.
type tomlExample struct {
	page    string
	line    int // of the opening fence, 1-based
	text    string
	counter bool // marked with counterExampleMark: must be refused
	project bool // its first line is a comment naming .devsandbox.toml: a project file
}

func (e tomlExample) String() string { return fmt.Sprintf("%s:%d", e.page, e.line) }

// tomlExamples returns the ```toml blocks of the Markdown file at path.
func tomlExamples(path string) ([]tomlExample, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading the examples: %w", err)
	}
	defer f.Close()
	var out []tomlExample
	var cur *tomlExample
	prev := "" // the last line that is not blank, outside a block
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		fence := strings.HasPrefix(line, "```")
		switch {
		case cur == nil && fence && strings.TrimSpace(strings.TrimPrefix(line, "```")) == "toml":
			cur = &tomlExample{page: path, line: n, counter: prev == counterExampleMark}
		case cur != nil && fence:
			first, _, _ := strings.Cut(cur.text, "\n")
			cur.project = strings.HasPrefix(first, "#") && strings.Contains(first, config.ProjectFileName)
			out = append(out, *cur)
			cur, prev = nil, ""
		case cur != nil:
			cur.text += sc.Text() + "\n"
		case line != "":
			prev = line
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	if cur != nil {
		return nil, fmt.Errorf("%s: a ```toml block is not closed", cur)
	}
	return out, nil
}

// checkExample runs e through the CLI a reader would use, in a fresh project with a
// home of its own: `config validate FILE` for a file kept outside the project, and, for
// a project file, `config trust` in the project, which holds it to the project-file
// rules too. It returns what went against the page's word: an example that is
// refused, or a counter-example that is accepted.
func checkExample(t *testing.T, e tomlExample) string {
	t.Helper()
	env := testProject(t)
	file := filepath.Join(t.TempDir(), "example.toml")
	args := []string{"config", "validate", file}
	if e.project {
		file, args = config.ProjectFileName, []string{"config", "trust"}
	}
	if err := os.WriteFile(file, []byte(e.text), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	a := &app{stdout: &out, stderr: &errb, environ: env}
	code := a.main(args)
	switch {
	case e.counter && code == 0:
		return fmt.Sprintf("the counter-example is accepted by `devsandbox %s`:\n%s", strings.Join(args, " "), e.text)
	case e.counter && (code != exitFailure || errb.Len() == 0):
		return fmt.Sprintf("the counter-example: exit %d (want %d with a message), stderr %q", code, exitFailure, errb.String())
	case !e.counter && code != 0:
		return fmt.Sprintf("`devsandbox %s` refuses the example (exit %d): %s%s(mark it %s on the line above its fence if it shows what is refused)",
			strings.Join(args, " "), code, errb.String(), e.text, counterExampleMark)
	}
	return ""
}

// TestDocExamplesValidate: every ```toml example of README.md and docs/*.md is
// accepted by `devsandbox config validate` (a project file's by `config trust`, under
// the project-file rules), unless it is marked as a counter-example, which must be
// refused.
func TestDocExamplesValidate(t *testing.T) {
	pages, err := filepath.Glob("../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	pages = append(pages, "../../README.md")
	n, projects := 0, 0
	for _, page := range pages {
		examples, err := tomlExamples(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range examples {
			n++
			if e.project {
				projects++
			}
			t.Run(strings.TrimPrefix(e.String(), "../../"), func(t *testing.T) {
				if msg := checkExample(t, e); msg != "" {
					t.Error(msg)
				}
			})
		}
	}
	if len(pages) < 5 || n < 4 || projects < 1 {
		t.Fatalf("found %d ```toml examples (%d project files) in %d pages: is the extraction broken?", n, projects, len(pages))
	}
}

// TestDocExamplesCatchBreakage: the check above fails on a broken example, on a
// counter-example that loads, and on a project file that loosens the sandbox, so it
// cannot pass vacuously.
func TestDocExamplesCatchBreakage(t *testing.T) {
	page := filepath.Join(t.TempDir(), "page.md")
	doc := "text\n\n```toml\n[sandbox]\nrelax_syscall = [\"io_uring\"]\n```\n\n```sh\nnot = toml\n```\n\n" +
		"```toml\n[tools.nosuchtool]\nenabled = false\n```\n\n" +
		counterExampleMark + "\n\n```toml\n[limits]\npids = 100\n```\n\n" +
		"```toml\n# .devsandbox.toml\n[sandbox]\nmode = \"off\"\n```\n\n" +
		counterExampleMark + "\n```toml\n[limits]\npids = \"many\"\n```\n"
	if err := os.WriteFile(page, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	examples, err := tomlExamples(page)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range examples {
		got = append(got, fmt.Sprintf("%d counter=%v project=%v", e.line, e.counter, e.project))
	}
	want := []string{"3 counter=false project=false", "12 counter=false project=false", "19 counter=true project=false", "24 counter=false project=true", "31 counter=true project=false"}
	if strings.Join(got, "; ") != strings.Join(want, "; ") {
		t.Fatalf("examples %q, want %q", got, want)
	}
	for i, e := range examples {
		msg := checkExample(t, e)
		if wantFail := i < 4; (msg != "") != wantFail {
			t.Errorf("%s: the check says %q; want a failure: %v", e, msg, wantFail)
		}
	}
}
