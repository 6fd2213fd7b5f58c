package capem_test

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io/fs"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/devsandbox/devsandbox/proxy/ca"
	"github.com/devsandbox/devsandbox/proxy/ca/capem"
)

// Load reads what ca makes as ca does: the certificate alone, the PEM handed to
// devsandbox-proxy byte for byte, and the certificate's end of validity.
func TestLoadAgreesWithCA(t *testing.T) {
	dir := t.TempDir()
	c, err := ca.LoadOrCreate(dir, "proj", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	f, err := capem.Load(filepath.Join(dir, capem.FileName))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(f.CertPEM, c.CertPEM) || !bytes.Equal(f.PEM(), c.PEM()) || !f.NotAfter.Equal(c.TLS.Leaf.NotAfter) {
		t.Errorf("capem read %q, %v; ca %q, %v", f.CertPEM, f.NotAfter, c.CertPEM, c.TLS.Leaf.NotAfter)
	}
	if _, err := ca.Parse(f.PEM()); err != nil {
		t.Errorf("devsandbox-proxy refuses what capem hands it: %v", err)
	}
}

// certPEM is a self-signed certificate from tmpl, PEM, and its key, PKCS #8 PEM.
func certPEM(t *testing.T, tmpl *x509.Certificate) (cert, key []byte) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	p8, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: p8})
}

// Every file ca.Load refuses for what capem checks is refused by capem.Load too, with
// the same advice; capem leaves only the key's pairing with the certificate to
// devsandbox-proxy (ca.Parse at its start).
func TestLoadRefuses(t *testing.T) {
	now := time.Now()
	tmpl := func(isCA, constraints bool) *x509.Certificate {
		return &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "x"},
			NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
			KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: constraints, IsCA: isCA}
	}
	caCert, caKey := certPEM(t, tmpl(true, true))
	leaf, leafKey := certPEM(t, tmpl(false, true))
	bare, bareKey := certPEM(t, tmpl(false, false))
	garbled := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte("\x30\x03\x02\x01\x01")})
	b, _ := pem.Decode(caCert)
	trailing := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: append(b.Bytes, 0x05, 0x00)})
	for _, tt := range []struct {
		name string
		data []byte
		mode os.FileMode
		want string
	}{
		{"readable by others", append(caCert, caKey...), 0o644, "must be 0600"},
		{"no key", caCert, 0o600, "no certificate or no private key"},
		{"no certificate", caKey, 0o600, "no certificate or no private key"},
		{"a leaf", append(leaf, leafKey...), 0o600, "not a CA certificate"},
		{"no basic constraints", append(bare, bareKey...), 0o600, "not a CA certificate"},
		{"garbled", append(garbled, caKey...), 0o600, "malformed certificate"},
		{"trailing data", append(trailing, caKey...), 0o600, "malformed certificate"},
	} {
		path := filepath.Join(t.TempDir(), capem.FileName)
		if err := os.WriteFile(path, tt.data, tt.mode); err != nil {
			t.Fatal(err)
		}
		_, err := capem.Load(path)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want an error saying %q", tt.name, err, tt.want)
		}
		if _, caErr := ca.Load(path); caErr == nil {
			t.Errorf("%s: ca.Load accepts what capem refuses", tt.name)
		}
		if err != nil && tt.mode == 0o600 && !strings.Contains(err.Error(), "remove it and devsandbox creates a new one") {
			t.Errorf("%s: %v gives no advice", tt.name, err)
		}
	}
	if _, err := capem.Load(filepath.Join(t.TempDir(), capem.FileName)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing CA: %v, want fs.ErrNotExist", err)
	}
	path := filepath.Join(t.TempDir(), capem.FileName)
	if err := os.WriteFile(path, append(caCert, caKey...), 0o600); err != nil {
		t.Fatal(err)
	}
	if f, err := capem.Load(path); err != nil || !f.NotAfter.Equal(now.Add(time.Hour).Truncate(time.Second)) {
		t.Errorf("a CA: %v, %v", f, err)
	}
}

// Bundle keeps the system's CAs and adds the proxy's after a line break.
func TestBundle(t *testing.T) {
	if got := string(capem.Bundle([]byte("SYS"), []byte("CA\n"))); got != "SYS\nCA\n" {
		t.Errorf("Bundle = %q", got)
	}
	if got := string(capem.Bundle(nil, []byte("CA\n"))); got != "CA\n" {
		t.Errorf("Bundle without system CAs = %q", got)
	}
}
