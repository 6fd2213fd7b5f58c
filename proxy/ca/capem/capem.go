// Package capem reads the proxy CA's file (package ca) without the crypto packages:
// the certificate alone, PEM, for the sandbox's CA bundle; certificate and key, PEM,
// for devsandbox-proxy; and the certificate's end of validity, for the renewal. It
// links encoding/pem and encoding/asn1 only, so devsandbox, which reads the CA on
// every proxy.mitm launch, links neither crypto/x509 nor crypto/tls: their package
// init and pages cost every launch, in every egress mode, about 45 page faults.
//
// Package ca makes the CA, renews it and checks it whole (the key pairs with the
// certificate, tls.X509KeyPair): devsandbox-proxy runs it, to make the CA when it is
// missing or expiring (ca.CreateArg) and on every start, on the PEM it is handed.
// What Load checks here is what the renewal and the sandbox's bundle rely on: the
// file's mode, one certificate and one private key, the certificate well-formed as far
// as it is read (DER, v3, one signature algorithm, a serial number that is not
// negative), a CA (basic constraints), and its validity. FuzzParse holds these to
// crypto/x509's reading of the same certificate; the names, the public key and the
// other extensions are left to devsandbox-proxy's check.
package capem

import (
	"bytes"
	"encoding/asn1"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"os"
	"time"
)

// FileName is the CA's file in the project's state directory: the certificate and the
// PKCS #8 private key, both PEM.
const FileName = "proxy-ca.pem"

// CreateArg is devsandbox-proxy's argument to make the CA (ca.CreateArg).
const CreateArg = "make-proxy-ca"

// Validity of a new CA, and how long before its end it is replaced.
const (
	Validity = 5 * 365 * 24 * time.Hour
	Renew    = 30 * 24 * time.Hour
)

// File is a CA file as read, not yet checked whole (see the package comment).
type File struct {
	CertPEM  []byte    // the certificate alone, PEM: what the sandbox trusts
	NotAfter time.Time // the certificate's end of validity
	pem      []byte    // certificate and key, PEM, as ca.Parse reads them
}

// PEM returns the certificate and the private key, PEM, as ca.Parse reads them. It is
// a secret: it belongs in the CA file and in devsandbox-proxy's memory only.
func (f *File) PEM() []byte { return f.pem }

// Load reads the CA file at path, with ca.Load's errors. A file others may read is an
// error: its key signs certificates every sandbox of the project trusts.
func Load(path string) (*File, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("reading the proxy CA: %w", err)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("the proxy CA %s has mode %v: it holds a private key and must be 0600; remove it and devsandbox creates a new one", path, fi.Mode().Perm())
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the proxy CA: %w", err)
	}
	f, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("the proxy CA %s: %w; remove it and devsandbox creates a new one", path, err)
	}
	return f, nil
}

// Parse reads a CA from PEM holding its certificate and its PKCS #8 private key: the
// last block of each type, as ca.Parse takes them.
func Parse(data []byte) (*File, error) {
	var cert *pem.Block
	var certPEM, keyPEM []byte
	for rest := data; ; {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		switch b.Type {
		case "CERTIFICATE":
			cert, certPEM = b, pem.EncodeToMemory(b)
		case "PRIVATE KEY":
			keyPEM = pem.EncodeToMemory(b)
		}
	}
	if certPEM == nil || keyPEM == nil {
		return nil, errors.New("no certificate or no private key")
	}
	notAfter, err := checkCA(cert.Bytes)
	if err != nil {
		return nil, err
	}
	return &File{CertPEM: certPEM, NotAfter: notAfter, pem: append(certPEM, keyPEM...)}, nil
}

// The X.509 certificate (RFC 5280, section 4.1) as far as checkCA reads it.
type certificate struct {
	TBS                tbsCertificate
	SignatureAlgorithm asn1.RawValue
	Signature          asn1.BitString
}

// Version and Extensions are explicitly tagged; encoding/asn1 checks neither the
// length of an explicit tag nor that nothing follows its value, so checkCA reads
// both from the tagged element itself (explicit). A RawValue takes any element: a
// certificate without its version (v1) is refused, as it must be.
type tbsCertificate struct {
	Version         asn1.RawValue `asn1:"optional,tag:0"`
	SerialNumber    *big.Int
	Signature       asn1.RawValue
	Issuer          asn1.RawValue
	Validity        validity
	Subject         asn1.RawValue
	PublicKey       asn1.RawValue
	IssuerUniqueID  asn1.BitString `asn1:"optional,tag:1"`
	SubjectUniqueID asn1.BitString `asn1:"optional,tag:2"`
	Extensions      asn1.RawValue  `asn1:"optional,tag:3"`
}

type validity struct{ NotBefore, NotAfter time.Time }

type extension struct {
	ID       asn1.ObjectIdentifier
	Critical bool `asn1:"optional"`
	Value    []byte
}

// basicConstraints' path length is read whole: encoding/asn1 would take a negative
// one, which crypto/x509 refuses.
type basicConstraints struct {
	IsCA       bool          `asn1:"optional"`
	MaxPathLen asn1.RawValue `asn1:"optional"`
}

// valid reports whether the path length, when present, is an INTEGER between 0 and
// the largest int, as crypto/x509 reads it.
func (bc *basicConstraints) valid() bool {
	if bc.MaxPathLen.FullBytes == nil {
		return true
	}
	var n *big.Int
	rest, err := asn1.Unmarshal(bc.MaxPathLen.FullBytes, &n)
	return err == nil && len(rest) == 0 && n.Sign() >= 0 && n.BitLen() < 64
}

var oidBasicConstraints = asn1.ObjectIdentifier{2, 5, 29, 19}

// checkCA returns the end of validity of the DER certificate der, which must be a
// well-formed v3 certificate whose basic constraints make it a CA.
func checkCA(der []byte) (time.Time, error) {
	var c certificate
	if rest, err := asn1.Unmarshal(der, &c); err != nil {
		return time.Time{}, fmt.Errorf("a malformed certificate: %w", err)
	} else if len(rest) > 0 {
		return time.Time{}, errors.New("a malformed certificate: trailing data")
	}
	v := 0 // absent: v1
	if c.TBS.Version.FullBytes != nil && !explicit(c.TBS.Version, 0, &v) {
		return time.Time{}, errors.New("a malformed certificate: bad version")
	}
	switch {
	case v < 0 || v > 2:
		return time.Time{}, fmt.Errorf("a malformed certificate: version %d", v)
	case v < 2: // v1 and v2 have no extensions: crypto/x509 reads none
		return time.Time{}, fmt.Errorf("not a CA certificate: an X.509 v%d certificate", v+1)
	}
	if c.TBS.SerialNumber.Sign() < 0 {
		return time.Time{}, errors.New("a malformed certificate: a negative serial number")
	}
	// The signature's algorithm stands in the certificate twice; crypto/x509 and
	// RFC 5280 (section 4.1.1.2) want the same one.
	if !isSequence(c.SignatureAlgorithm) || !bytes.Equal(c.SignatureAlgorithm.FullBytes, c.TBS.Signature.FullBytes) {
		return time.Time{}, errors.New("a malformed certificate: two different signature algorithms")
	}
	var exts []extension
	if c.TBS.Extensions.FullBytes != nil && !explicit(c.TBS.Extensions, 3, &exts) {
		return time.Time{}, errors.New("a malformed certificate: bad extensions")
	}
	var bc *basicConstraints
	seen := make(map[string]bool, len(exts))
	for _, e := range exts {
		id := e.ID.String()
		if seen[id] {
			return time.Time{}, fmt.Errorf("a malformed certificate: two extensions %s", id)
		}
		seen[id] = true
		if !e.ID.Equal(oidBasicConstraints) {
			continue
		}
		bc = new(basicConstraints)
		if rest, err := asn1.Unmarshal(e.Value, bc); err != nil || len(rest) > 0 || !bc.valid() {
			return time.Time{}, errors.New("a malformed certificate: bad basic constraints")
		}
	}
	if bc == nil || !bc.IsCA {
		return time.Time{}, errors.New("not a CA certificate")
	}
	return c.TBS.Validity.NotAfter, nil
}

// explicit reads into out the one value v holds, v an element explicitly tagged
// [tag].
func explicit(v asn1.RawValue, tag int, out any) bool {
	if v.Class != asn1.ClassContextSpecific || v.Tag != tag || !v.IsCompound {
		return false
	}
	rest, err := asn1.Unmarshal(v.Bytes, out)
	return err == nil && len(rest) == 0
}

// isSequence reports whether v is a universal, constructed SEQUENCE.
func isSequence(v asn1.RawValue) bool {
	return v.Class == asn1.ClassUniversal && v.Tag == asn1.TagSequence && v.IsCompound
}

// SystemBundles are the usual places of the system's CA bundle, as crypto/x509 looks
// for them on Linux (Debian, Fedora, openSUSE, OpenELEC, CentOS, Alpine).
func SystemBundles() []string {
	return []string{
		"/etc/ssl/certs/ca-certificates.crt",
		"/etc/pki/tls/certs/ca-bundle.crt",
		"/etc/ssl/ca-bundle.pem",
		"/etc/pki/tls/cacert.pem",
		"/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",
		"/etc/ssl/cert.pem",
	}
}

// Bundle is system followed by caPEM: a CA file that trusts what the system trusts
// and the proxy's CA.
func Bundle(system, caPEM []byte) []byte {
	out := make([]byte, 0, len(system)+len(caPEM)+1)
	out = append(out, system...)
	if len(out) > 0 && out[len(out)-1] != '\n' {
		out = append(out, '\n')
	}
	return append(out, caPEM...)
}
