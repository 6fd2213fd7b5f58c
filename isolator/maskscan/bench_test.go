package maskscan

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// BenchmarkScan200k scans a project of 200,000 files in 2,011 directories (10 ×
// 10 × 19 below the root), 20 of them masked. The tree is built once, which takes a
// while; then it is left alone for the racy margin, as a project usually is.
func BenchmarkScan200k(b *testing.B) {
	root := b.TempDir()
	var dirs []string
	for i := range 10 {
		for j := range 10 {
			for k := range 19 {
				dirs = append(dirs, fmt.Sprintf("d%d/e%d/f%d", i, j, k))
			}
		}
	}
	for _, d := range dirs {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			b.Fatal(err)
		}
	}
	var g errgroup
	for w := range 4 {
		g.Go(func() error {
			for n := w; n < 200_000; n += 4 {
				name := fmt.Sprintf("file%d.go", n)
				if n%10_000 == 0 {
					name = fmt.Sprintf(".env.%d", n)
				}
				if err := os.WriteFile(filepath.Join(root, dirs[n%len(dirs)], name), nil, 0o644); err != nil {
					return err
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		b.Fatal(err)
	}
	unix.Sync() // or writeback competes with the scans
	cache := filepath.Join(b.TempDir(), "cache")
	if _, err := Scan(root, defaults, cache); err != nil {
		b.Fatal(err)
	}
	time.Sleep(margin + 100*time.Millisecond)
	s := scanner{now: time.Now, workers: defaultWorkers()}
	scan := func(b *testing.B, s scanner, cacheFile string) stats {
		ms, st, err := s.scan(root, defaults, cacheFile)
		if err != nil || len(ms) != 20 {
			b.Fatalf("scan: %d matches, %v", len(ms), err)
		}
		return st
	}
	scan(b, s, cache) // settles the directories that were racy when the cache was written

	b.Run("warm", func(b *testing.B) {
		for b.Loop() {
			if st := scan(b, s, cache); st.reads != 0 || st.wrote {
				b.Fatalf("warm scan: %+v", st)
			}
		}
	})
	b.Run("warm-1-worker", func(b *testing.B) {
		s := s
		s.workers = 1
		for b.Loop() {
			scan(b, s, cache)
		}
	})
	b.Run("warm-1-dir-changed", func(b *testing.B) {
		// Each scan reads the changed directory (and any racy one) and rewrites the cache.
		leaf := filepath.Join(root, dirs[len(dirs)/2], "new.txt")
		for i := 0; b.Loop(); i++ {
			b.StopTimer()
			var err error
			if i%2 == 0 {
				err = os.WriteFile(leaf, nil, 0o644)
			} else {
				err = os.Remove(leaf)
			}
			if err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			if st := scan(b, s, cache); st.reads == 0 || !st.wrote {
				b.Fatalf("scan after a change: %+v", st)
			}
		}
	})
	b.Run("full-walk", func(b *testing.B) {
		for b.Loop() {
			scan(b, s, "")
		}
	})
	b.Run("full-walk-tool-marks", func(b *testing.B) {
		// The marks a launch scans with: .git and the base names of the files host
		// tools read in every directory (isolator.SubdirFiles), patterns included.
		m := defaults
		m.Mark = []string{".git", "rust-toolchain.toml", "rust-toolchain", ".tool-versions", "mise.toml", ".mise.toml", "config.toml",
			"mise.local.toml", "conf.d", ".rtx.toml", "mise.*.toml", ".mise.*.toml", "config.*.toml", ".rtx.*.toml", ".miserc.toml", "miserc.toml", ".yarnrc.yml", ".yarnrc"}
		for b.Loop() {
			if ms, _, err := s.scan(root, m, ""); err != nil || len(ms) != 20 {
				b.Fatalf("scan: %d matches, %v", len(ms), err)
			}
		}
	})
	b.Run("full-walk-os.ReadDir", func(b *testing.B) {
		for b.Loop() {
			reference(b, root, defaults)
		}
	})
	data, err := os.ReadFile(cache)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("decode", func(b *testing.B) {
		b.ReportMetric(float64(len(data)), "cache-bytes")
		for b.Loop() {
			if decode(data, root, defaults.key(), time.Now().UnixNano()) == nil {
				b.Fatal("does not decode")
			}
		}
	})
	b.Run("encode", func(b *testing.B) {
		tree := decode(data, root, defaults.key(), time.Now().UnixNano())
		for b.Loop() {
			encode(root, defaults.key(), 0, tree)
		}
	})
}

// errgroup is the part of golang.org/x/sync/errgroup the benchmark needs.
type errgroup struct {
	wg   sync.WaitGroup
	once sync.Once
	err  error
}

func (g *errgroup) Go(f func() error) {
	g.wg.Go(func() {
		if err := f(); err != nil {
			g.once.Do(func() { g.err = err })
		}
	})
}

func (g *errgroup) Wait() error {
	g.wg.Wait()
	return g.err
}
