package docker

import (
	"errors"
	"fmt"
	"strings"
)

// errTLSMaterial is the class of a client that could not be made because its TLS
// material (DOCKER_CERT_PATH's files, the docker context's) does not load.
var errTLSMaterial = errors.New("the engine's TLS material does not load")

// tlsFix is the fix of an engine that wants TLS with a client certificate the client
// does not present.
const tlsFix = "set DOCKER_TLS_VERIFY=1 and DOCKER_CERT_PATH to the directory of the engine's CA and your client certificate (ca.pem, cert.pem, key.pem), or use a docker context that has them (docker context create NAME --docker host=tcp://HOST:2376,ca=…,cert=…,key=…)"

// tlsCause explains err, a failed request to the engine at a, when TLS is the cause:
// the engine wants TLS and was spoken to without it, it refused the client's
// certificate (or the lack of one), or the client did not trust the engine's
// certificate. It says which CA and certificate were used, and what to change; ok is
// false for any other failure. The errors are matched by their text: they reach here
// from the docker client, and across the helper's pipe, as text.
func tlsCause(a Address, err error) (reason, fix string, ok bool) {
	msg := err.Error()
	at := fmt.Sprintf("the docker engine at %s (%s)", a.Host, a.Origin)
	switch {
	case strings.Contains(msg, "Client sent an HTTP request to an HTTPS server"):
		reason = at + " speaks TLS and requires a client certificate, but devsandbox reached it over plain TCP"
		if a.CertPathUnused != "" {
			reason += " (DOCKER_CERT_PATH " + a.CertPathUnused + " is set, but DOCKER_TLS_VERIFY is not, so it is not used)"
		} else {
			reason += " (DOCKER_TLS_VERIFY is not set and the docker context has no TLS material)"
		}
		return reason, tlsFix, true
	case strings.Contains(msg, "remote error: tls:"):
		alert := msg[strings.Index(msg, "remote error: tls:")+len("remote error: "):]
		if a.Cert == "" {
			return fmt.Sprintf("%s refused the connection (%s): it requires a client certificate, and devsandbox has none to present (TLS from %s)", at, alert, tlsFrom(a)), tlsFix, true
		}
		// Go's client presents its certificate only when its issuer is among the CAs the
		// engine names: one of another CA reaches the engine as none ("certificate
		// required").
		return fmt.Sprintf("%s refused the client certificate %s (TLS from %s; %s): the engine accepts only certificates signed by its own CA (dockerd --tlscacert)", at, a.Cert, tlsFrom(a), alert),
			"use a client certificate and key signed by the CA the engine trusts: replace cert.pem and key.pem in DOCKER_CERT_PATH, or the docker context's TLS material", true
	case strings.Contains(msg, "tls: failed to verify certificate") || strings.Contains(msg, "x509: "):
		ca := "the system's roots"
		if a.CACert != "" {
			ca = a.CACert
		}
		detail := msg
		if i := strings.Index(msg, "x509: "); i >= 0 {
			detail = msg[i:]
		}
		return fmt.Sprintf("devsandbox does not trust the certificate of %s: %s (verified against %s, TLS from %s)", at, detail, ca, tlsFrom(a)),
			"set DOCKER_CERT_PATH to a directory whose ca.pem is the CA that signed the engine's certificate (or fix the docker context's ca), and check that the address names the engine that certificate is for", true
	}
	return "", "", false
}

// tlsFrom names where a's TLS material came from.
func tlsFrom(a Address) string {
	if a.TLS == "" {
		return "nowhere"
	}
	return a.TLS
}

// dialFix is the fix of err, a client for the engine that could not be made.
func dialFix(err error) string {
	if errors.Is(err, errTLSMaterial) {
		return "DOCKER_CERT_PATH (or the docker context's TLS material) must hold the engine's CA as ca.pem and your client certificate and key as cert.pem and key.pem, readable by you"
	}
	return startHint
}
