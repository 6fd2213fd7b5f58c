package ca

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// TestLoadOrCreate: the first use creates one 0600 file in a 0700 directory; later
// uses load the same CA; a CA near its end is replaced.
func TestLoadOrCreate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state", "proj-1")
	now := time.Now()
	a, err := LoadOrCreate(dir, "proj-1", now)
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]os.FileMode{dir: os.ModeDir | 0o700, filepath.Join(dir, FileName): 0o600} {
		if fi, err := os.Stat(path); err != nil || fi.Mode() != want {
			t.Errorf("%s: %v %v, want mode %v", path, fi.Mode(), err, want)
		}
	}
	if l := a.TLS.Leaf; !l.IsCA || l.Subject.CommonName != "devsandbox proxy CA proj-1" || !l.MaxPathLenZero {
		t.Errorf("certificate %+v", l.Subject)
	}
	b, err := LoadOrCreate(dir, "proj-1", now)
	if err != nil || !bytes.Equal(a.CertPEM, b.CertPEM) {
		t.Fatalf("second load: %v, same CA %v", err, bytes.Equal(a.CertPEM, b.CertPEM))
	}
	c, err := LoadOrCreate(dir, "proj-1", now.Add(Validity-Renew+time.Hour))
	if err != nil || bytes.Equal(a.CertPEM, c.CertPEM) {
		t.Fatalf("an expiring CA was not replaced: %v", err)
	}
	if p, err := Parse(c.PEM()); err != nil || !bytes.Equal(p.CertPEM, c.CertPEM) {
		t.Errorf("Parse(PEM()): %v", err)
	}
}

// TestConcurrentCreate: sessions starting together share one CA.
func TestConcurrentCreate(t *testing.T) {
	dir := t.TempDir()
	got := make([][]byte, 8)
	var wg sync.WaitGroup
	for i := range got {
		wg.Go(func() {
			c, err := LoadOrCreate(dir, "p", time.Now())
			if err != nil {
				t.Error(err)
				return
			}
			got[i] = c.CertPEM
		})
	}
	wg.Wait()
	for _, g := range got {
		if !bytes.Equal(g, got[0]) {
			t.Fatal("sessions got different CAs")
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("%d files left in the state dir, want 1", len(ents))
	}
}

// TestLoadRefusesOpenFile: a key others may read is not used.
func TestLoadRefusesOpenFile(t *testing.T) {
	dir := t.TempDir()
	if _, err := LoadOrCreate(dir, "p", time.Now()); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, FileName)
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadOrCreate(dir, "p", time.Now()); err == nil {
		t.Error("a CA file of mode 0644 was used")
	}
}

// TestBundle: the system's CAs stay, the proxy's is added, and the result parses.
func TestBundle(t *testing.T) {
	c, err := LoadOrCreate(t.TempDir(), "p", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	other, _ := LoadOrCreate(t.TempDir(), "system", time.Now())
	sys := bytes.TrimSuffix(other.CertPEM, []byte("\n")) // a bundle without a final newline
	b := Bundle(sys, c.CertPEM)
	var n int
	for rest := b; ; n++ {
		var blk *pem.Block
		if blk, rest = pem.Decode(rest); blk == nil {
			break
		}
		if _, err := x509.ParseCertificate(blk.Bytes); err != nil {
			t.Fatal(err)
		}
	}
	if n != 2 || bytes.Contains(b, []byte("PRIVATE KEY")) {
		t.Errorf("bundle has %d certificates (want 2) or a key:\n%s", n, b)
	}
}
