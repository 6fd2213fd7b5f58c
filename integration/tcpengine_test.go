//go:build integration

package integration

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// tcpDocker is the docker variant against a remote engine over TCP with TLS
// (DOCKER_HOST=tcp://127.0.0.1:PORT, DOCKER_TLS_VERIFY=1, DOCKER_CERT_PATH), as a
// remote engine or a TLS docker context is reached: the stand-in engine behind a TLS
// front the suite serves (setupTCPEngine) that requires a client certificate of its
// own CA and relays each connection to the stand-in's socket. devsandbox judges a
// tcp:// engine as not local (engineaddr.Address.Local): the home is a named volume,
// as on Docker Desktop. The containers' home is elsewhere than the host home
// (elsewhereVariants), as on a Mac. It runs the few tests that call withTCP, when
// docker-remote is among DEVSANDBOX_IT_ISOLATORS.
const tcpDocker = "docker-tcp"

// tcpEngine is where the TLS front listens and the client's TLS material.
var tcpEngine struct {
	host, certDir string
}

// tcpEnv is the environment naming the TLS engine.
func tcpEnv() []string {
	return []string{"DOCKER_HOST=" + tcpEngine.host, "DOCKER_TLS_VERIFY=1", "DOCKER_CERT_PATH=" + tcpEngine.certDir}
}

// withTCP is isos with tcpDocker added when the stand-in's variant is among them.
func withTCP(isos []string) []string {
	if slices.Contains(isos, remoteDocker) {
		return append(slices.Clone(isos), tcpDocker)
	}
	return isos
}

// setupTCPEngine starts the TLS front to the stand-in, with a CA, a server
// certificate for 127.0.0.1 and a client certificate made for this suite run, and
// returns why it cannot ("" when it runs). The front lives as long as the suite.
func setupTCPEngine() string {
	if engineReady[remoteDocker] != "" {
		return "the stand-in engine is not ready: " + engineReady[remoteDocker]
	}
	sock, ok := strings.CutPrefix(remoteEngine, "unix://")
	if !ok {
		return "the stand-in's address is not a Unix socket: " + remoteEngine
	}
	dir := filepath.Join(it.tmp, "engine-tls")
	cfg, err := makeEngineTLS(dir)
	if err != nil {
		return "making the TLS material: " + err.Error()
	}
	l, err := tls.Listen("tcp", "127.0.0.1:0", cfg)
	if err != nil {
		return err.Error()
	}
	tcpEngine.host, tcpEngine.certDir = "tcp://"+l.Addr().String(), dir
	go relayFront(l, sock)
	return ""
}

// relayFront relays every connection l accepts to the Unix socket sock, until l is
// closed: the test fronts of the stand-in engine (TLS, plain TCP).
func relayFront(l net.Listener, sock string) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		go relayToSocket(c, sock)
	}
}

// relayToSocket copies c to a new connection to the Unix socket sock and back, each
// direction closed for writing when the other side has finished (the engine's
// hijacked streams, attach and exec, end that way).
func relayToSocket(c net.Conn, sock string) {
	defer c.Close()
	u, err := net.Dial("unix", sock)
	if err != nil {
		return
	}
	defer u.Close()
	up := make(chan struct{})
	go func() {
		_, _ = io.Copy(u, c)
		_ = u.(*net.UnixConn).CloseWrite()
		close(up)
	}()
	_, _ = io.Copy(c, u)
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
	<-up
}

// makeEngineTLS writes dir/ca.pem, cert.pem and key.pem (the client's, the test
// user's) and returns the front's server configuration: its own certificate for
// 127.0.0.1, client certificates of the CA required.
func makeEngineTLS(dir string) (*tls.Config, error) {
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, err
	}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "devsandbox-it engine CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	leaf := func(serial int64, name string, usage x509.ExtKeyUsage) ([]byte, *ecdsa.PrivateKey, error) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return nil, nil, err
		}
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name},
			NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), KeyUsage: x509.KeyUsageDigitalSignature,
			ExtKeyUsage: []x509.ExtKeyUsage{usage}}
		if usage == x509.ExtKeyUsageServerAuth {
			tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		return der, key, err
	}
	serverDER, serverKey, err := leaf(2, "127.0.0.1", x509.ExtKeyUsageServerAuth)
	if err != nil {
		return nil, err
	}
	clientDER, clientKey, err := leaf(3, "devsandbox-it client", x509.ExtKeyUsageClientAuth)
	if err != nil {
		return nil, err
	}
	keyPEM, err := x509.MarshalECPrivateKey(clientKey)
	if err != nil {
		return nil, err
	}
	for name, f := range map[string]struct {
		typ  string
		der  []byte
		mode os.FileMode
	}{"ca.pem": {"CERTIFICATE", caDER, 0o644}, "cert.pem": {"CERTIFICATE", clientDER, 0o644}, "key.pem": {"EC PRIVATE KEY", keyPEM, 0o600}} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: f.typ, Bytes: f.der}), f.mode); err != nil {
			return nil, err
		}
		if err := os.Lchown(p, it.uid, it.gid); err != nil {
			return nil, err
		}
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	return &tls.Config{
		Certificates: []tls.Certificate{{Certificate: [][]byte{serverDER}, PrivateKey: serverKey}},
		ClientAuth:   tls.RequireAndVerifyClientCert, ClientCAs: pool, MinVersion: tls.VersionTLS12,
	}, nil
}

// doctor judges the TLS engine as a launch would: active, at its tcp:// address from
// DOCKER_HOST, the stand-in's Docker version; the docker isolator can run there. A
// client without the certificate is refused by the front (the test of the test).
func TestTCPEngineDoctor(t *testing.T) {
	if !slices.Contains(isolators(), remoteDocker) {
		t.Skip("docker-remote is not among DEVSANDBOX_IT_ISOLATORS")
	}
	requireEngine(t, tcpDocker)
	p := newProject(t)
	r := run(t, p.dir, append(tcpEnv(), "DEVSANDBOX_ISOLATOR=docker"), "", "doctor")
	t.Logf("devsandbox doctor against %s:\n%s", tcpEngine.host, r.stdout)
	version := dockerAt(t, remoteDocker, "version", "--format", "{{.Server.Version}}")
	if got, want := doctorRow(r.stdout, "docker engine"), "active  "+tcpEngine.host+" (DOCKER_HOST), Docker "+version; !strings.HasPrefix(got, want) {
		t.Errorf("doctor's docker engine row:\n%q\nwant the prefix\n%q\n%s", got, want, r)
	}
	if got, want := doctorRow(r.stdout, "docker engine"), "; reached over TCP with TLS, the engine's certificate verified (DOCKER_CERT_PATH "+tcpEngine.certDir+")"; !strings.HasSuffix(got, want) {
		t.Errorf("doctor's docker engine row:\n%q\nwant the suffix\n%q", got, want)
	}
	if got := doctorRow(r.stdout, "docker engine channel"); got != "" {
		t.Errorf("doctor warns of a TLS-verified engine: %q", got)
	}
	if got := doctorRow(r.stdout, "docker isolator"); !strings.HasPrefix(got, "active") {
		t.Errorf("doctor's docker isolator row: %q\n%s", got, r)
	}
	r = run(t, p.dir, []string{"DOCKER_HOST=" + tcpEngine.host, "DEVSANDBOX_ISOLATOR=docker"}, "", "doctor")
	if got := doctorRow(r.stdout, "docker engine"); !strings.HasPrefix(got, "unavailable") {
		t.Errorf("doctor without the client certificate: the docker engine row %q, want unavailable\n%s", got, r)
	}
}
