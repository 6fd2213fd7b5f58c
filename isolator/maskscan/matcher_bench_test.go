package maskscan

import (
	"fmt"
	"testing"
)

// BenchmarkMatcherReported is what a scan spends per name it reads, with the marks
// of .git alone and with those of the files host tools read in every directory.
func BenchmarkMatcherReported(b *testing.B) {
	names := []string{"main.go", "README.md", "config.go", "mise_test.go", ".gitignore", "rust", "Cargo.toml", "package.json", "index.js", "mod.rs"}
	for i := range 90 {
		names = append(names, fmt.Sprintf("file%d.go", i))
	}
	for _, tc := range []struct {
		name string
		mark []string
	}{
		{"git", []string{".git"}},
		{"tool-files", []string{".git", "rust-toolchain.toml", "rust-toolchain", ".tool-versions", "mise.toml", ".mise.toml", "config.toml",
			"mise.local.toml", "conf.d", ".rtx.toml", "mise.*.toml", ".mise.*.toml", "config.*.toml", ".rtx.*.toml", ".miserc.toml", "miserc.toml"}},
	} {
		m, err := compile(Matcher{Mask: defaults.Mask, Skip: defaults.Skip, Mark: tc.mark})
		if err != nil {
			b.Fatal(err)
		}
		b.Run(tc.name, func(b *testing.B) {
			for b.Loop() {
				for _, n := range names {
					if m.reported(n) {
						b.Fatal(n)
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(names)), "ns/name")
		})
	}
}
