package companion

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// The roots reach crypto/x509 through SSL_CERT_FILE without a file in any directory:
// the image's /tmp may not be writable by the companion's user (busybox's is 0755), and
// the content cannot be changed once written.
func TestUseRootsInMemory(t *testing.T) {
	t.Setenv("SSL_CERT_FILE", "")
	t.Setenv("SSL_CERT_DIR", "/nonexistent")
	tmp := t.TempDir()
	if err := os.Chmod(tmp, 0o555); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TMPDIR", tmp) // not writable: a file there would fail
	roots := []byte("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")
	if err := useRoots(roots); err != nil {
		t.Fatalf("useRoots: %v", err)
	}
	name := os.Getenv("SSL_CERT_FILE")
	if !strings.HasPrefix(name, "/proc/self/fd/") {
		t.Fatalf("SSL_CERT_FILE = %q, want a /proc/self/fd path", name)
	}
	if _, ok := os.LookupEnv("SSL_CERT_DIR"); ok {
		t.Errorf("SSL_CERT_DIR is still set")
	}
	got, err := os.ReadFile(name)
	if err != nil || !bytes.Equal(got, roots) {
		t.Fatalf("reading SSL_CERT_FILE: %q, %v; want %q", got, err, roots)
	}
	// Sealed: neither a write through a new descriptor nor a truncation takes.
	if f, err := os.OpenFile(name, os.O_WRONLY, 0); err == nil {
		_, werr := f.Write([]byte("-----BEGIN CERTIFICATE-----\nplanted\n"))
		terr := f.Truncate(0)
		f.Close()
		if werr == nil || terr == nil {
			t.Errorf("the roots could be changed: write %v, truncate %v", werr, terr)
		}
	}
	if got, _ := os.ReadFile(name); !bytes.Equal(got, roots) {
		t.Errorf("the roots changed: %q", got)
	}
	if ents, _ := os.ReadDir(tmp); len(ents) != 0 {
		t.Errorf("files left in TMPDIR: %v", ents)
	}
}
