package config

import (
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkLoad is a launch's config.Load: a small user file, no project file.
func BenchmarkLoad(b *testing.B) {
	home := b.TempDir()
	dir := filepath.Join(home, ".config", "devsandbox")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.toml"), []byte("# a user file\n[sandbox]\nmode = \"enforce\"\n"), 0o600); err != nil {
		b.Fatal(err)
	}
	proj := filepath.Join(home, "proj")
	if err := os.Mkdir(proj, 0o700); err != nil {
		b.Fatal(err)
	}
	env := []string{"HOME=" + home, "USER=u", "PATH=/usr/bin:/bin"}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, _, err := Load(LoadOptions{ProjectDir: proj, Environ: env, UID: 1000, GID: 1000}); err != nil {
			b.Fatal(err)
		}
	}
}
