package proxy

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestUpgradedEchoMasked: after a protocol upgrade (a WebSocket) to the credential's
// host, what the host sends back on the upgraded connection is no less masked than a
// body: a host that echoes the handshake's Authorization there does not hand the
// value to the sandbox.
func TestUpgradedEchoMasked(t *testing.T) {
	cred := Credential{Host: "example.com", Header: "Authorization", Format: "Bearer {}", Value: testToken, Name: "TOKEN"}
	m := newMITM(t, Config{Credentials: []Credential{cred}}, func(w http.ResponseWriter, r *http.Request) {
		c, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer c.Close()
		io.WriteString(c, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
		io.WriteString(c, "handshake had "+r.Header.Get("Authorization")+"\n")
	})
	c := m.h.dialUnix(t)
	if resp, _, _ := rawConnect(t, c, "example.com:443"); resp.StatusCode != 200 {
		t.Fatal(resp.Status)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(m.ca.CertPEM)
	tc := tls.Client(c, &tls.Config{RootCAs: roots, ServerName: "example.com", NextProtos: []string{"http/1.1"}})
	io.WriteString(tc, "GET /ws HTTP/1.1\r\nHost: example.com\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
	br := bufio.NewReader(tc)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	_ = tc.SetReadDeadline(time.Now().Add(10 * time.Second))
	if resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatal(resp.Status)
	}
	rest, _ := io.ReadAll(br) // the host closes once it has written
	if strings.Contains(string(rest), testToken) || !strings.HasPrefix(string(rest), "handshake had Bearer *") {
		t.Errorf("the upgraded connection handed the value back: %d %q", resp.StatusCode, rest)
	}
}
