package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// mdLink is a Markdown inline link or image: [text](target) or [text](target "title").
var mdLink = regexp.MustCompile(`!?\[[^\]]*\]\(([^)\s]*)(?:\s+"[^"]*")?\)`)

// codeSpan is an inline code span, whose text is not Markdown.
var codeSpan = regexp.MustCompile("`+[^`]*`+")

// urlScheme starts a link that is not a path: https:, mailto:, ...
var urlScheme = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)

// mdHeading is an ATX heading.
var mdHeading = regexp.MustCompile(`^ {0,3}#{1,6}\s+(.*?)(?:\s+#+)?\s*$`)

// mdLine is one line of a Markdown page outside fenced code blocks.
type mdLine struct {
	n    int
	text string
}

// proseLines returns the lines of the Markdown file at path outside fenced code
// blocks (``` or ~~~).
func proseLines(path string) ([]mdLine, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading links: %w", err)
	}
	defer f.Close()
	var out []mdLine
	fence := ""
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		t := strings.TrimSpace(line)
		switch {
		case fence == "" && (strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~")):
			fence = t[:3]
		case fence != "" && strings.HasPrefix(t, fence):
			fence = ""
		case fence == "":
			out = append(out, mdLine{n, line})
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	return out, nil
}

// githubSlug is the anchor GitHub gives a heading's text: the rendered text (code
// spans and links as their text) lowercased, without the characters that are not
// letters, marks, numbers, connector punctuation (_), spaces or hyphens, spaces
// turned into hyphens.
func githubSlug(heading string) string {
	heading = mdLink.ReplaceAllStringFunc(heading, func(l string) string {
		return l[strings.Index(l, "[")+1 : strings.Index(l, "]")]
	})
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || unicode.In(r, unicode.L, unicode.M, unicode.N, unicode.Pc):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// anchors returns the anchors of the Markdown file at path as GitHub makes them: a
// heading's slug, then slug-1, slug-2, ... for the headings that repeat it.
func anchors(path string) (map[string]bool, error) {
	lines, err := proseLines(path)
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	seen := map[string]int{}
	for _, l := range lines {
		m := mdHeading.FindStringSubmatch(l.text)
		if m == nil {
			continue
		}
		slug := githubSlug(m[1])
		a := slug
		if k := seen[slug]; k > 0 {
			a = slug + "-" + strconv.Itoa(k)
		}
		seen[slug]++
		out[a] = true
	}
	return out, nil
}

// brokenLinks returns, for the Markdown file at page, each relative link whose file
// does not exist or whose #anchor names no heading of the Markdown page it points at.
// Links with a scheme (https:, mailto:) are not followed.
func brokenLinks(page string) ([]string, int, error) {
	lines, err := proseLines(page)
	if err != nil {
		return nil, 0, err
	}
	cache := map[string]map[string]bool{}
	var broken []string
	n := 0
	for _, l := range lines {
		text := codeSpan.ReplaceAllString(l.text, "")
		for _, m := range mdLink.FindAllStringSubmatch(text, -1) {
			target := m[1]
			if target == "" || urlScheme.MatchString(target) {
				continue
			}
			n++
			file, frag, _ := strings.Cut(target, "#")
			path := page
			if file != "" {
				path = filepath.Join(filepath.Dir(page), file)
				if _, err := os.Stat(path); err != nil {
					broken = append(broken, fmt.Sprintf("%s:%d: %s: no such file", page, l.n, target))
					continue
				}
			}
			if frag == "" || !strings.HasSuffix(path, ".md") {
				continue
			}
			if cache[path] == nil {
				a, err := anchors(path)
				if err != nil {
					return nil, 0, err
				}
				cache[path] = a
			}
			if !cache[path][frag] {
				broken = append(broken, fmt.Sprintf("%s:%d: %s: no heading with that anchor in %s", page, l.n, target, path))
			}
		}
	}
	return broken, n, nil
}

// TestDocLinks: the relative links of README.md and docs/*.md reach a file, and
// their #anchors a heading, as GitHub renders them.
func TestDocLinks(t *testing.T) {
	pages, err := filepath.Glob("../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	pages = append([]string{"../../README.md"}, pages...)
	total := 0
	for _, p := range pages {
		broken, n, err := brokenLinks(p)
		if err != nil {
			t.Fatal(err)
		}
		total += n
		for _, b := range broken {
			t.Error(b)
		}
	}
	if len(pages) < 3 || total < 50 {
		t.Fatalf("%d relative links in %d pages: is the extraction broken?", total, len(pages))
	}
}

// TestDocLinksCatchBreakage: the check above finds a missing file and a missing
// anchor, and keeps what GitHub would resolve, so it cannot pass vacuously.
func TestDocLinksCatchBreakage(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{
		"other.md": "# Other page\n\n## What `--egress=proxy` adds, and where it went\n\n## Resource limits\n\n## Resource limits\n\n```sh\n# not a heading\n```\n",
		"page.md": "# Page\n\n" +
			"[ok](other.md) [ok](other.md#other-page) [ok](other.md#what---egressproxy-adds-and-where-it-went)\n" +
			"[ok](other.md#resource-limits-1) [ok](#page) [ok](https://example.com/x#y) `[skipped](nowhere.md)`\n" +
			"[bad](missing.md)\n[bad](other.md#not-a-heading)\n[bad](#nope)\n[bad](other.md#resource-limits-2)\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	broken, n, err := brokenLinks(filepath.Join(dir, "page.md"))
	if err != nil {
		t.Fatal(err)
	}
	if n != 9 || len(broken) != 4 {
		t.Errorf("%d links, broken: %q; want 9 links and the 4 marked bad", n, broken)
	}
	for _, b := range broken {
		if !strings.Contains(b, "page.md:5:") && !strings.Contains(b, "page.md:6:") && !strings.Contains(b, "page.md:7:") && !strings.Contains(b, "page.md:8:") {
			t.Errorf("reported a good link: %s", b)
		}
	}
	if a, _ := anchors(filepath.Join(dir, "other.md")); a["not-a-heading"] {
		t.Error("a comment in a code block counts as a heading")
	}
}
