package watch

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"

	"github.com/devsandbox/devsandbox/isolator"
)

// TestListerPresent: a tripwire's path is present exactly when lstat(2) finds it,
// whether its directory's listing answers (a file, a link, a dangling link, a name
// the directory lacks, a directory that is missing, a file, or a link) or lstat does
// (a directory over listMax names); on Linux the listings are used.
func TestListerPresent(t *testing.T) {
	d := t.TempDir()
	write := func(p string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	link := func(target, p string) {
		t.Helper()
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
	}
	write(d + "/p/.envrc")
	write(d + "/p/.vscode/tasks.json")
	link(d+"/p/.envrc", d+"/p/mise.toml")
	link(d+"/gone", d+"/p/.mcp.json")
	write(d + "/p/afile")
	link(d+"/p/.vscode", d+"/p/.zed")
	for i := range listMax + 1 {
		write(fmt.Sprintf("%s/p/big/f%d", d, i))
	}
	var paths []string
	for _, rel := range []string{".envrc", ".tool-versions", "mise.toml", ".mcp.json", ".vscode/tasks.json",
		".vscode/launch.json", ".claude/settings.json", "afile/x", ".zed/tasks.json", ".zed/debug.json",
		"big/f7", "big/none"} {
		paths = append(paths, d+"/p/"+rel)
	}
	l := newLister()
	for _, p := range paths {
		_, err := os.Lstat(p)
		want := err == nil
		got := l.present(isolator.Tripwire{Path: p})
		if (len(got) == 1 && got[0] == p) != want || len(got) > 1 {
			t.Errorf("%s: present %q, lstat finds it: %v", p, got, want)
		}
	}
	// Patterns: the entries os.ReadDir lists that match, sorted, whether the listing
	// answers (p, a missing directory) or os.ReadDir itself (big).
	for _, pat := range []string{"p/*.json", "p/.*", "p/mise*", "none/*", "p/big/f1*", "p/afile/*"} {
		want := []string(nil)
		ents, _ := os.ReadDir(filepath.Dir(d + "/" + pat))
		for _, e := range ents {
			if ok, _ := filepath.Match(filepath.Base(pat), e.Name()); ok {
				want = append(want, filepath.Join(filepath.Dir(d+"/"+pat), e.Name()))
			}
		}
		if got := l.present(isolator.Tripwire{Path: d + "/" + pat, Pattern: true}); !slices.Equal(got, want) {
			t.Errorf("%s: present %q, want %q", pat, got, want)
		}
	}
	if runtime.GOOS != "linux" {
		return
	}
	// One listing per directory for both kinds: a pattern in a listed directory
	// does not list it again.
	for dir, again := range map[string]bool{d + "/p": false, d + "/none": false, d + "/p/big": true} {
		if _, ok := l.matched[dir]; ok != again {
			t.Errorf("%s listed again for a pattern: %v, want %v", dir, ok, again)
		}
	}
	for dir, listed := range map[string]bool{d + "/p": true, d + "/p/.claude": true, d + "/p/afile": true, d + "/p/.zed": true, d + "/p/big": false} {
		if _, ok := l.names[dir]; ok != listed {
			t.Errorf("%s listed: %v, want %v", dir, ok, listed)
		}
	}
}
