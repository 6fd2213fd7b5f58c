// Package ca is the certificate authority of the egress proxy's MITM mode: one ECDSA
// P-256 key and its self-signed certificate per project, stored together in one file of
// mode 0600 in the project's state directory and created on first use; and the CA
// bundle the sandbox trusts, the system's CAs followed by this one.
//
// The key never enters a sandbox: devsandbox-proxy reads the file to sign leaf
// certificates, and the sandbox sees only the certificate, in the bundle.
//
// The package is separate from the proxy so that the CA can be made without linking
// the proxy's HTTP stack; it imports only the standard library and package capem,
// through which devsandbox reads the CA and builds the bundle without the crypto
// packages (devsandbox-proxy makes the CA for it: CreateArg).
package ca

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"os"
	"path/filepath"
	"time"

	"github.com/devsandbox/devsandbox/proxy/ca/capem"
)

// FileName is the CA's file in the project's state directory: the certificate and the
// PKCS #8 private key, both PEM.
const FileName = capem.FileName

// Validity of a new CA, and how long before its end it is replaced.
const (
	Validity = capem.Validity
	Renew    = capem.Renew
)

// CreateArg is devsandbox-proxy's argument to make the CA: `devsandbox-proxy
// CreateArg DIR NAME` runs LoadOrCreate(DIR, NAME, now). devsandbox, which does not
// link this package (see package capem), has the CA made that way.
const CreateArg = capem.CreateArg

// CA is a loaded certificate authority.
type CA struct {
	CertPEM []byte          // the certificate alone, PEM: what the sandbox trusts
	TLS     tls.Certificate // certificate and key, Leaf parsed: what the proxy signs with
	pem     []byte          // certificate and key, PEM, as stored
}

// PEM returns the certificate and the private key, PEM, as Parse reads them. It is a
// secret: it belongs in the CA file and in devsandbox-proxy's memory only.
func (c *CA) PEM() []byte { return c.pem }

// Load reads the CA file at path. A file others may read is an error: its key signs
// certificates every sandbox of the project trusts. The file's checks are
// capem.Load's (devsandbox reads it that way); Parse then checks the pair whole.
func Load(path string) (*CA, error) {
	f, err := capem.Load(path)
	if err != nil {
		return nil, err
	}
	c, err := fromFile(f)
	if err != nil {
		return nil, fmt.Errorf("the proxy CA %s: %w; remove it and devsandbox creates a new one", path, err)
	}
	return c, nil
}

// Parse reads a CA from PEM holding its certificate and its PKCS #8 private key: the
// blocks and the certificate's form as capem.Parse reads them, then the pair whole.
func Parse(data []byte) (*CA, error) {
	f, err := capem.Parse(data)
	if err != nil {
		return nil, err
	}
	return fromFile(f)
}

// fromFile checks f whole: its key pairs with its certificate, which is a CA.
func fromFile(f *capem.File) (*CA, error) {
	// X509KeyPair takes the key's block from certificate and key together: it skips
	// blocks that hold no private key.
	pair, err := tls.X509KeyPair(f.CertPEM, f.PEM())
	if err != nil {
		return nil, err
	}
	if !pair.Leaf.IsCA {
		return nil, errors.New("not a CA certificate")
	}
	return &CA{CertPEM: f.CertPEM, TLS: pair, pem: f.PEM()}, nil
}

// LoadOrCreate returns the CA in dir/FileName, creating it (and dir, 0700) when it is
// missing or ends within Renew of now. name goes into the certificate's subject, so
// people can tell which project's CA they are looking at. The file appears atomically;
// two sessions creating it at once get the same CA (the first one wins). A session
// reads the file once and hands the CA to its proxy (PEM), so a renewal by another
// session never splits a sandbox's trust from its proxy's key.
func LoadOrCreate(dir, name string, now time.Time) (*CA, error) {
	path := filepath.Join(dir, FileName)
	c, err := Load(path)
	switch {
	case err == nil && now.Add(Renew).Before(c.TLS.Leaf.NotAfter):
		return c, nil
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return nil, err
	}
	replace := err == nil // an expiring CA is replaced; a missing one is created
	pemData, err := generate(name, now)
	if err != nil {
		return nil, fmt.Errorf("creating the proxy CA: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating the proxy CA: %w", err)
	}
	tmp, err := os.CreateTemp(dir, ".proxy-ca-*") // mode 0600
	if err != nil {
		return nil, fmt.Errorf("creating the proxy CA: %w", err)
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(pemData)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil && replace {
		err = os.Rename(tmp.Name(), path)
	} else if err == nil {
		// Link fails if another session created the file meanwhile: use theirs.
		if err = os.Link(tmp.Name(), path); errors.Is(err, fs.ErrExist) {
			err = nil
		}
	}
	if err != nil {
		return nil, fmt.Errorf("creating the proxy CA: %w", err)
	}
	return Load(path)
}

// generate returns a new CA certificate and key, PEM.
func generate(name string, now time.Time) ([]byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{Organization: []string{"devsandbox"}, CommonName: "devsandbox proxy CA " + name},
		NotBefore:             now.Add(-time.Hour), // a clock slightly behind still accepts it
		NotAfter:              now.Add(Validity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true, // it signs leaf certificates only
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	pkcs8, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	_ = pem.Encode(&b, &pem.Block{Type: "CERTIFICATE", Bytes: der})
	_ = pem.Encode(&b, &pem.Block{Type: "PRIVATE KEY", Bytes: pkcs8})
	return b.Bytes(), nil
}

// SystemBundles are the usual places of the system's CA bundle (capem.SystemBundles).
func SystemBundles() []string { return capem.SystemBundles() }

// Bundle is system followed by caPEM (capem.Bundle).
func Bundle(system, caPEM []byte) []byte { return capem.Bundle(system, caPEM) }
