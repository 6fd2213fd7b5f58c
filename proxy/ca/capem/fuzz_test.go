package capem_test

import (
	"bytes"
	"crypto/x509"
	"encoding/asn1"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/devsandbox/devsandbox/proxy/ca"
	"github.com/devsandbox/devsandbox/proxy/ca/capem"
)

// outOfClaims are the parts of crypto/x509's error messages for what capem does not
// claim to check, beside the public key (see withKey): names, the algorithm
// identifiers' contents, and extensions other than the basic constraints. A
// certificate wrong in those only is refused by devsandbox-proxy on every start
// (ca.Parse), never by capem. Any other refusal by x509 of a certificate capem
// accepts is a bug in capem.
var outOfClaims = []string{
	"RDNSequence", "malformed issuer",
	"malformed OID", "malformed parameters",
	"key usage", "subject alternative name", "SAN ", "authority key identifier", "extended key usages",
	"certificate policies", "NameConstraints", "name constraints", "constraint value",
	"CRL distribution point", "policy constraints", "subject key identifier", "policy mappings",
	"inhibit any policy", "authority info access",
}

// FuzzParse holds capem.Parse to what it claims against crypto/x509 and crypto/tls:
// it never panics or hangs; what it accepts holds a certificate and a private key
// block, hands on the last of each, and its certificate is one crypto/x509 parses as
// a CA (v3, basic constraints cA) with the same end of validity, once its public key
// (which capem does not read) is swapped for a good one, unless x509 refuses it for
// something else capem leaves to devsandbox-proxy (outOfClaims). Whatever x509
// refuses in the certificate as it is, devsandbox-proxy refuses (ca.Parse).
func FuzzParse(f *testing.F) {
	seeds, goodKey := seeds(f)
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := capem.Parse(data)
		if err != nil {
			return
		}
		certs, keys := blocks(data)
		if len(certs) == 0 || len(keys) == 0 {
			t.Fatalf("accepted without a certificate or a key: %q", data)
		}
		cert, key := certs[len(certs)-1], keys[len(keys)-1]
		if want := append(pem.EncodeToMemory(cert), pem.EncodeToMemory(key)...); !bytes.Equal(got.PEM(), want) {
			t.Fatalf("handed on %q, want the last certificate and key %q", got.PEM(), want)
		}
		if !bytes.Equal(got.CertPEM, pem.EncodeToMemory(cert)) {
			t.Fatalf("the sandbox's certificate %q is not the last certificate", got.CertPEM)
		}
		if _, xerr := x509.ParseCertificate(cert.Bytes); xerr != nil {
			if _, err := ca.Parse(data); err == nil {
				t.Fatalf("devsandbox-proxy accepts a certificate x509 refuses (%v)", xerr)
			}
		}
		der, ok := withKey(cert.Bytes, goodKey)
		if !ok {
			t.Fatalf("accepted a certificate whose elements do not parse\n%x", cert.Bytes)
		}
		c, xerr := x509.ParseCertificate(der)
		if xerr != nil {
			for _, s := range outOfClaims {
				if strings.Contains(xerr.Error(), s) {
					return
				}
			}
			t.Fatalf("accepted a certificate crypto/x509 refuses: %v\n%x", xerr, cert.Bytes)
		}
		if c.Version != 3 || !c.BasicConstraintsValid || !c.IsCA {
			t.Fatalf("accepted as a CA a certificate x509 reads as v%d, basic constraints %v, CA %v\n%x", c.Version, c.BasicConstraintsValid, c.IsCA, cert.Bytes)
		}
		if !c.NotAfter.Equal(got.NotAfter) {
			t.Fatalf("end of validity %v, x509 reads %v\n%x", got.NotAfter, c.NotAfter, cert.Bytes)
		}
	})
}

// withKey returns the certificate der with its subject public key info replaced by
// key, the lengths around it fixed up, and nothing else changed.
func withKey(der, key []byte) ([]byte, bool) {
	var cert, tbs asn1.RawValue
	if rest, err := asn1.Unmarshal(der, &cert); err != nil || len(rest) > 0 {
		return nil, false
	}
	after, err := asn1.Unmarshal(cert.Bytes, &tbs)
	if err != nil {
		return nil, false
	}
	var out []byte
	rest := tbs.Bytes
	for i := 0; ; i++ {
		var el asn1.RawValue
		next, err := asn1.Unmarshal(rest, &el)
		if err != nil {
			return nil, false
		}
		if i == 0 && (el.Class != asn1.ClassContextSpecific || el.Tag != 0) {
			i++ // no version: the serial number comes first
		}
		if i == 6 { // version, serial, signature, issuer, validity, subject, key
			out = append(append(out, key...), next...)
			break
		}
		out = append(out, el.FullBytes...)
		rest = next
	}
	tbsDER, err := asn1.Marshal(asn1.RawValue{Tag: asn1.TagSequence, IsCompound: true, Bytes: out})
	if err != nil {
		return nil, false
	}
	certDER, err := asn1.Marshal(asn1.RawValue{Tag: asn1.TagSequence, IsCompound: true, Bytes: append(tbsDER, after...)})
	return certDER, err == nil
}

// blocks returns data's CERTIFICATE and PRIVATE KEY blocks, in order.
func blocks(data []byte) (certs, keys []*pem.Block) {
	for rest := data; ; {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			return certs, keys
		}
		switch b.Type {
		case "CERTIFICATE":
			certs = append(certs, b)
		case "PRIVATE KEY":
			keys = append(keys, b)
		}
	}
}

// seeds are CA files as package ca makes them, and broken variants of them; and the
// public key info of the first.
func seeds(f *testing.F) ([][]byte, []byte) {
	f.Helper()
	dir := f.TempDir()
	if _, err := ca.LoadOrCreate(dir, "fuzz", time.Now()); err != nil {
		f.Fatal(err)
	}
	real, err := os.ReadFile(filepath.Join(dir, capem.FileName))
	if err != nil {
		f.Fatal(err)
	}
	certs, keys := blocks(real)
	cert, key := pem.EncodeToMemory(certs[0]), pem.EncodeToMemory(keys[0])
	der := certs[0].Bytes
	c, err := x509.ParseCertificate(der)
	if err != nil {
		f.Fatal(err)
	}
	reblock := func(b []byte) []byte {
		return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: b})
	}
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	return [][]byte{
		real,
		cat(key, cert),                       // key first
		cat(cert, cert, key),                 // two certificates
		cat(cert, key, key),                  // two keys
		cert,                                 // no key
		key,                                  // no certificate
		real[:len(real)/2],                   // cut short
		cat(reblock(der[:len(der)-1]), key),  // DER cut short
		cat(reblock(append(der, 0, 0)), key), // trailing data
		cat(reblock(der[4:]), key),           // outer header gone
		cat(reblock(bytes.Replace(der, []byte{0xa0, 3, 2, 1, 2}, []byte{0xa0, 3, 2, 1, 0}, 1)), key), // v1
		bytes.ReplaceAll(real, []byte("\n"), []byte("\r\n")),
		cat([]byte("junk before\n"), real, []byte("junk after\n")),
		[]byte(""),
	}, c.RawSubjectPublicKeyInfo
}
