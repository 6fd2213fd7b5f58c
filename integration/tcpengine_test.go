//go:build integration

package integration

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// tcpDocker is the docker variant against a remote engine over TCP with TLS
// (DOCKER_HOST=tcp://127.0.0.1:PORT, DOCKER_TLS_VERIFY=1, DOCKER_CERT_PATH), as a
// remote engine or a TLS docker context is reached: the stand-in engine's own TLS
// listener (dockerd -H tcp://127.0.0.1:PORT --tlsverify, client certificates of its CA
// required), which scripts/setup-test-env.sh starts with the TLS material it makes in
// /var/lib/dsb-remote/tls. devsandbox judges a tcp:// engine as not local
// (engineaddr.Address.Local): the home is a named volume, as on Docker Desktop. The
// containers' home is elsewhere than the host home (elsewhereVariants), as on a Mac.
// It runs the few tests that call withTCP, when docker-remote is among
// DEVSANDBOX_IT_ISOLATORS.
const tcpDocker = "docker-tcp"

// tcpEngine is the stand-in's TLS listener (setup-test-env.sh's REMOTE_TLS_PORT) and
// the client's TLS material (ca.pem, cert.pem and key.pem, readable by the docker
// group, which the test user is in).
var tcpEngine = struct {
	host, certDir string
}{"tcp://127.0.0.1:12376", "/var/lib/dsb-remote/tls/client"}

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

// setupTCPEngine checks that the stand-in's TLS listener answers with the client
// certificate and is the stand-in (the engine at its socket), and returns why the
// variant cannot run ("" when it can).
func setupTCPEngine() string {
	if engineReady[remoteDocker] != "" {
		return "the stand-in engine is not ready: " + engineReady[remoteDocker]
	}
	if remoteEngine != defaultRemoteEngine {
		return "the stand-in is " + remoteEngine + " (DEVSANDBOX_IT_REMOTE_ENGINE), not the one whose TLS listener is " + tcpEngine.host
	}
	cmd := exec.Command("docker", "info", "--format", "{{.ID}}")
	cmd.Env = append(os.Environ(), tcpEnv()...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Sprintf("the stand-in's TLS listener %s does not answer with the client certificate in %s (scripts/setup-test-env.sh starts it): %v: %s", tcpEngine.host, tcpEngine.certDir, err, bytes.TrimSpace(out))
	}
	id, err := dockerCmd(remoteDocker, "info", "--format", "{{.ID}}").Output()
	if err != nil || !bytes.Equal(bytes.TrimSpace(out), bytes.TrimSpace(id)) {
		return fmt.Sprintf("the engine at %s (%s) is not the stand-in at %s (%s, %v)", tcpEngine.host, bytes.TrimSpace(out), remoteEngine, bytes.TrimSpace(id), err)
	}
	return ""
}

// relayFront relays every connection l accepts to the Unix socket sock, until l is
// closed: the plain TCP fronts of the stand-in engine (plainFront). What the
// clients send is also written to sent, when not nil (what crosses in clear).
func relayFront(l net.Listener, sock string, sent io.Writer) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		go relayToSocket(c, sock, sent)
	}
}

// relayToSocket copies c to a new connection to the Unix socket sock and back, each
// direction closed for writing when the other side has finished (the engine's
// hijacked streams, attach and exec, end that way).
func relayToSocket(c net.Conn, sock string, sent io.Writer) {
	defer c.Close()
	u, err := net.Dial("unix", sock)
	if err != nil {
		return
	}
	defer u.Close()
	var from io.Reader = c
	if sent != nil {
		from = io.TeeReader(c, sent)
	}
	up := make(chan struct{})
	go func() {
		_, _ = io.Copy(u, from)
		_ = u.(*net.UnixConn).CloseWrite()
		close(up)
	}()
	_, _ = io.Copy(c, u)
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
	<-up
}

// doctor judges the TLS engine as a launch would: active, at its tcp:// address from
// DOCKER_HOST, the stand-in's Docker version; the docker isolator can run there.
// dockerd's listener refuses a client that speaks no TLS, and one whose certificate
// is not of the engine's CA: doctor says unavailable, with dockerd's refusal.
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
	// An engine that refuses the client, or that the client does not trust, answers:
	// the row names the cause and the TLS material used, and the fix is not to start
	// Docker.
	foreign := foreignClientCert(t, p)
	wrongCA := wrongCA(t, p, foreign)
	const plainFix = "set DOCKER_TLS_VERIFY=1 and DOCKER_CERT_PATH to the directory of the engine's CA and your client certificate (ca.pem, cert.pem, key.pem), or use a docker context that has them (docker context create NAME --docker host=tcp://HOST:2376,ca=…,cert=…,key=…)"
	at := "the docker engine at " + tcpEngine.host + " (DOCKER_HOST)"
	for _, c := range []struct {
		name string
		env  []string
		want string // the docker engine row
	}{
		{"no TLS", []string{"DOCKER_HOST=" + tcpEngine.host},
			"unavailable  " + at + " speaks TLS and requires a client certificate, but devsandbox reached it over plain TCP (DOCKER_TLS_VERIFY is not set and the docker context has no TLS material); fix: " + plainFix},
		{"DOCKER_CERT_PATH without DOCKER_TLS_VERIFY", []string{"DOCKER_HOST=" + tcpEngine.host, "DOCKER_CERT_PATH=" + tcpEngine.certDir},
			"unavailable  " + at + " speaks TLS and requires a client certificate, but devsandbox reached it over plain TCP (DOCKER_CERT_PATH " + tcpEngine.certDir + " is set, but DOCKER_TLS_VERIFY is not, so it is not used); fix: " + plainFix},
		{"a certificate of another CA", append(tcpEnv()[:2:2], "DOCKER_CERT_PATH="+foreign),
			"unavailable  " + at + " refused the client certificate " + foreign + "/cert.pem (TLS from DOCKER_CERT_PATH " + foreign + "; tls: certificate required): the engine accepts only certificates signed by its own CA (dockerd --tlscacert); fix: use a client certificate and key signed by the CA the engine trusts: replace cert.pem and key.pem in DOCKER_CERT_PATH, or the docker context's TLS material"},
		{"a CA that did not sign the engine's certificate", append(tcpEnv()[:2:2], "DOCKER_CERT_PATH="+wrongCA),
			"unavailable  devsandbox does not trust the certificate of " + at + ": x509: certificate signed by unknown authority (verified against " + wrongCA + "/ca.pem, TLS from DOCKER_CERT_PATH " + wrongCA + "); fix: set DOCKER_CERT_PATH to a directory whose ca.pem is the CA that signed the engine's certificate (or fix the docker context's ca), and check that the address names the engine that certificate is for"},
	} {
		r = run(t, p.dir, append(c.env, "DEVSANDBOX_ISOLATOR=docker"), "", "doctor")
		t.Logf("devsandbox doctor with %s:\n%s", c.name, r.stdout)
		if got := doctorRow(r.stdout, "docker engine"); got != c.want {
			t.Errorf("doctor with %s: the docker engine row\n%q\nwant\n%q\n%s", c.name, got, c.want, r)
		}
		// A run stops with the same words.
		r = run(t, p.dir, append(c.env, "DEVSANDBOX_ISOLATOR=docker"), "", "--", "true")
		_, detail, _ := strings.Cut(c.want, "  ")
		if want := "devsandbox: isolator unavailable: " + strings.Replace(detail, "; fix: ", "; ", 1); r.code != 125 || !strings.Contains(r.stderr, want) {
			t.Errorf("a run with %s: exit %d, want 125 with\n%q\n%s", c.name, r.code, want, r)
		}
	}
}

// TestTCPEngineTLSFilesMissing: a DOCKER_CERT_PATH without the client certificate
// names the files it must hold, in doctor and in a run, not "start Docker".
func TestTCPEngineTLSFilesMissing(t *testing.T) {
	if !slices.Contains(isolators(), remoteDocker) {
		t.Skip("docker-remote is not among DEVSANDBOX_IT_ISOLATORS")
	}
	requireEngine(t, tcpDocker)
	p := newProject(t)
	ca, err := os.ReadFile(filepath.Join(tcpEngine.certDir, "ca.pem"))
	if err != nil {
		t.Fatal(err)
	}
	p.write("ca-only/ca.pem", string(ca))
	env := append(tcpEnv()[:2:2], "DOCKER_CERT_PATH="+p.path("ca-only"), "DEVSANDBOX_ISOLATOR=docker")
	cause := "docker engine " + tcpEngine.host + " (DOCKER_HOST): the engine's TLS material does not load (from DOCKER_CERT_PATH " + p.path("ca-only") + "): failed to create tls config: could not load X509 key pair: open " + p.path("ca-only/cert.pem") + ": no such file or directory"
	const fix = "DOCKER_CERT_PATH (or the docker context's TLS material) must hold the engine's CA as ca.pem and your client certificate and key as cert.pem and key.pem, readable by you"
	r := run(t, p.dir, env, "", "doctor")
	if got, want := doctorRow(r.stdout, "docker engine"), "unavailable  isolator unavailable: "+cause+"; fix: "+fix; got != want {
		t.Errorf("doctor's docker engine row\n%q\nwant\n%q", got, want)
	}
	r = run(t, p.dir, env, "", "--", "true")
	if want := "devsandbox: isolator unavailable: " + cause + "; " + fix; r.code != 125 || !strings.Contains(r.stderr, want) {
		t.Errorf("a run: exit %d, want 125 with\n%q\n%s", r.code, want, r)
	}
}

// wrongCA writes, in p, what DOCKER_CERT_PATH names: the engine's client certificate
// and key, and as ca.pem a CA that did not sign the engine's certificate (the
// self-signed certificate in foreign, foreignClientCert's directory); it returns the
// directory.
func wrongCA(t *testing.T, p *project, foreign string) string {
	t.Helper()
	for name, from := range map[string]string{"ca.pem": filepath.Join(foreign, "cert.pem"), "cert.pem": filepath.Join(tcpEngine.certDir, "cert.pem"), "key.pem": filepath.Join(tcpEngine.certDir, "key.pem")} {
		b, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		p.write("wrong-ca/"+name, string(b))
	}
	if err := os.Chmod(p.path("wrong-ca/key.pem"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p.path("wrong-ca")
}

// foreignClientCert writes, in a directory of the test user's in p, what
// DOCKER_CERT_PATH names: the engine's ca.pem, and a client certificate and key of
// another CA (self-signed), which dockerd --tlsverify must refuse; it returns the
// directory.
func foreignClientCert(t *testing.T, p *project) string {
	t.Helper()
	ca, err := os.ReadFile(filepath.Join(tcpEngine.certDir, "ca.pem"))
	if err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "devsandbox-it foreign client"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	p.write("foreign-tls/ca.pem", string(ca))
	p.write("foreign-tls/cert.pem", string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})))
	p.write("foreign-tls/key.pem", string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})))
	if err := os.Chmod(p.path("foreign-tls/key.pem"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p.path("foreign-tls")
}
