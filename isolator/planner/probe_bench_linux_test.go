package planner

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkReadDirN lists a directory of 200 names as the planner does: whether it
// holds more than 32 (readDirN), and all of its names (listNames).
func BenchmarkReadDirN(b *testing.B) {
	dir := b.TempDir()
	for i := range 200 {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("alternative-%03d", i)), nil, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("first33", func(b *testing.B) {
		for b.Loop() {
			if ents, err := readDirN(dir, 33); err != nil || len(ents) != 33 {
				b.Fatal(len(ents), err)
			}
		}
	})
	b.Run("listNames", func(b *testing.B) {
		for b.Loop() {
			if names, err := listNames(dir); err != nil || len(names) != 200 {
				b.Fatal(len(names), err)
			}
		}
	})
}
