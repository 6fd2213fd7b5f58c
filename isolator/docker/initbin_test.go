package docker

import (
	"os"
	"path/filepath"
	"testing"
)

// The embedded init (macOS builds) is written once per content and architecture,
// executable, and an unknown architecture is refused.
func TestEmbeddedInit(t *testing.T) {
	dir := t.TempDir()
	bins := map[string][]byte{"amd64": []byte("ELF-amd64"), "arm64": []byte("ELF-arm64")}
	p, err := embeddedInit(dir, "arm64", bins)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil || string(b) != "ELF-arm64" || filepath.Dir(p) != dir {
		t.Fatalf("%s: %q %v", p, b, err)
	}
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o755 {
		t.Fatalf("mode %v", fi.Mode())
	}
	if again, err := embeddedInit(dir, "arm64", bins); err != nil || again != p {
		t.Fatalf("second call: %s %v", again, err)
	}
	if _, err := embeddedInit(dir, "s390x", bins); err == nil {
		t.Fatal("an architecture without a build was accepted")
	}
}
