package config

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// docPages are the pages whose ```toml examples must load as they are written.
var docPages = []string{"../docs/configuration.md", "../README.md"}

// tomlBlock is one fenced ```toml block of a Markdown page.
type tomlBlock struct {
	line int // of the opening fence, 1-based
	text string
}

// tomlBlocks returns the ```toml blocks of the Markdown file at path.
func tomlBlocks(path string) ([]tomlBlock, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading the examples: %w", err)
	}
	defer f.Close()
	var blocks []tomlBlock
	var cur *tomlBlock
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		fence := strings.HasPrefix(strings.TrimSpace(line), "```")
		switch {
		case cur == nil && fence && strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "```")) == "toml":
			cur = &tomlBlock{line: n}
		case cur != nil && fence:
			blocks = append(blocks, *cur)
			cur = nil
		case cur != nil:
			cur.text += line + "\n"
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	if cur != nil {
		return nil, fmt.Errorf("%s:%d: a ```toml block is not closed", path, cur.line)
	}
	return blocks, nil
}

// loadExample loads one example as `devsandbox config validate` does: strictly (an
// unknown key, a wrong type or a bad value is an error) and through every check a run
// makes on the configuration.
func loadExample(t *testing.T, text string) error {
	t.Helper()
	home, environ := testHome(t)
	host, err := HostFromEnviron(environ, 1000, 1000)
	if err != nil {
		t.Fatal(err)
	}
	path := writeFile(t, filepath.Join(home, "example.toml"), text)
	_, _, err = LoadFile(path, host)
	return err
}

// TestDocExamplesLoad: every ```toml example of the configuration reference and the
// README loads with the real loader.
func TestDocExamplesLoad(t *testing.T) {
	n := 0
	for _, page := range docPages {
		blocks, err := tomlBlocks(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range blocks {
			n++
			if err := loadExample(t, b.text); err != nil {
				t.Errorf("%s:%d: the example does not load: %v\n%s", page, b.line, err, b.text)
			}
		}
	}
	if n < 4 {
		t.Fatalf("found only %d ```toml examples in %q: is the extraction broken?", n, docPages)
	}
}

// TestDocExamplesCatchBreakage: the check above fails on a broken example, so it
// cannot pass vacuously.
func TestDocExamplesCatchBreakage(t *testing.T) {
	dir := t.TempDir()
	page := writeFile(t, filepath.Join(dir, "page.md"), "text\n\n```toml\n[sandbox]\nrelax_syscall = [\"io_uring\"]\n```\n\n```sh\nnot = toml\n```\n\n```toml\n[limits]\npids = \"many\"\n```\n")
	blocks, err := tomlBlocks(page)
	if err != nil {
		t.Fatal(err)
	}
	if len(blocks) != 2 || blocks[0].line != 3 || blocks[1].line != 12 {
		t.Fatalf("blocks %+v, want the two toml ones, at lines 3 and 12", blocks)
	}
	for _, b := range blocks {
		if err := loadExample(t, b.text); err == nil {
			t.Errorf("the example at line %d loads:\n%s", b.line, b.text)
		}
	}
}
