package docker

import (
	"errors"
	"testing"
)

// TestTLSCause: an engine that answers over TLS but refuses the client, or that the
// client does not trust, is told as such, naming the TLS material used; any other
// failure is not TLS's (engineDown says the engine does not answer).
func TestTLSCause(t *testing.T) {
	const host = "tcp://e.test:2376"
	withCerts := Address{Host: host, Origin: "DOCKER_HOST", TLS: "DOCKER_CERT_PATH /c", CACert: "/c/ca.pem", Cert: "/c/cert.pem", Key: "/c/key.pem"}
	caOnly := Address{Host: host, Origin: "context ci", TLS: "context ci", CACert: "/ctx/ca.pem"}
	tests := []struct {
		name   string
		a      Address
		err    string
		reason string // "" when not TLS's
	}{
		{"plain to a TLS engine", Address{Host: host, Origin: "DOCKER_HOST"}, "Error response from daemon: Client sent an HTTP request to an HTTPS server.",
			"the docker engine at tcp://e.test:2376 (DOCKER_HOST) speaks TLS and requires a client certificate, but devsandbox reached it over plain TCP (DOCKER_TLS_VERIFY is not set and the docker context has no TLS material)"},
		{"no client certificate", caOnly, `error during connect: Get "https://e.test:2376/v1.51/version": remote error: tls: certificate required`,
			"the docker engine at tcp://e.test:2376 (context ci) refused the connection (tls: certificate required): it requires a client certificate, and devsandbox has none to present (TLS from context ci)"},
		{"a certificate it does not accept", withCerts, `error during connect: Get "https://e.test:2376/v1.51/version": remote error: tls: bad certificate`,
			"the docker engine at tcp://e.test:2376 (DOCKER_HOST) refused the client certificate /c/cert.pem (TLS from DOCKER_CERT_PATH /c; tls: bad certificate): the engine accepts only certificates signed by its own CA (dockerd --tlscacert)"},
		{"an engine certificate of another CA", withCerts, `error during connect: Get "https://e.test:2376/v1.51/version": tls: failed to verify certificate: x509: certificate signed by unknown authority`,
			"devsandbox does not trust the certificate of the docker engine at tcp://e.test:2376 (DOCKER_HOST): x509: certificate signed by unknown authority (verified against /c/ca.pem, TLS from DOCKER_CERT_PATH /c)"},
		{"connection refused", withCerts, `error during connect: Get "https://e.test:2376/v1.51/version": dial tcp 10.0.0.1:2376: connect: connection refused`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reason, fix, ok := tlsCause(tt.a, errors.New(tt.err))
			if reason != tt.reason || ok != (tt.reason != "") || ok && fix == "" {
				t.Errorf("tlsCause:\n%q (%v, fix %q)\nwant\n%q", reason, ok, fix, tt.reason)
			}
			if st := engineDown(tt.a, errors.New(tt.err)); ok && (st.Reason != reason || st.Fix == startHint) {
				t.Errorf("engineDown says %q; fix %q", st.Reason, st.Fix)
			}
		})
	}
}
