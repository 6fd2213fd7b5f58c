package planner

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/devsandbox/devsandbox/config"
	"github.com/devsandbox/devsandbox/tools"
)

// BenchmarkClaudeSessions is the claude binding's launch-time work for a heavy user:
// 300 session files of 1-5 MiB (real records in their first 256 KiB) in the project's folder of ~/.claude/projects, each
// recording the project as its cwd in its first record, read through the host probe
// (Bindings and Warnings, as a launch calls them).
func BenchmarkClaudeSessions(b *testing.B) {
	home := b.TempDir()
	proj := filepath.Join(home, "src", "a-b")
	key := strings.Map(func(r rune) rune {
		if r < 128 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return r
		}
		return '-'
	}, proj)
	folder := filepath.Join(home, ".claude", "projects", key)
	for _, d := range []string{proj, folder} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			b.Fatal(err)
		}
	}
	filler := []byte(`{"parentUuid":"p","isSidechain":false,"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"` +
		strings.Repeat("lorem ipsum ", 170) + `"}]},"uuid":"u"}` + "\n")
	for i := range 300 {
		var buf bytes.Buffer
		fmt.Fprintf(&buf, `{"parentUuid":null,"isSidechain":false,"userType":"external","cwd":%q,"sessionId":"s%d","version":"2.0.0","type":"user","message":{"role":"user","content":"hello"}}`+"\n", proj, i)
		for buf.Len() < 256<<10 {
			buf.Write(filler)
		}
		// Past the first 256 KiB (more than any launch reads) the file is a hole:
		// its size is a heavy user's, without writing 900 MiB for each run.
		f := filepath.Join(folder, fmt.Sprintf("%08d-session.jsonl", i))
		if err := os.WriteFile(f, buf.Bytes(), 0o600); err != nil {
			b.Fatal(err)
		}
		if err := os.Truncate(f, int64(1+i%5)<<20); err != nil {
			b.Fatal(err)
		}
	}
	h := config.Host{Home: home, Vars: map[string]string{"HOME": home}}
	c := tools.Claude()
	for b.Loop() {
		th := ToolHost(h, OS(proj), proj) // one per launch
		shared := false
		for _, bd := range c.Bindings(th) {
			shared = shared || bd.Source == folder
		}
		if w := c.Warnings(th); w != nil || !shared {
			b.Fatalf("folder shared: %v; warnings %q", shared, w)
		}
	}
}
