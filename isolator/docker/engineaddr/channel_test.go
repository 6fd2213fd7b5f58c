package engineaddr

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/devsandbox/devsandbox/egress"
	"github.com/devsandbox/devsandbox/internal/enginehost"
	"github.com/devsandbox/devsandbox/isolator"
)

// How the client will dial the engine, from where the address and its TLS
// material came: the docker CLI's rules, except that devsandbox never speaks TLS
// without verifying.
func TestResolveTLS(t *testing.T) {
	home := t.TempDir()
	cfgDir := filepath.Join(home, ".docker")
	writeContext(t, cfgDir, "tls", "tcp://10.0.0.3:2376")
	writeContext(t, cfgDir, "plain", "tcp://10.0.0.4:2375")
	tlsDir := filepath.Join(cfgDir, "contexts", "tls", enginehost.ContextID("tls"), "docker")
	if err := os.MkdirAll(tlsDir, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"ca.pem", "cert.pem", "key.pem"} {
		if err := os.WriteFile(filepath.Join(tlsDir, f), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	pem := func(dir string) (string, string, string) {
		return filepath.Join(dir, "ca.pem"), filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	}
	tlsAddr := func(host, origin, from, dir string) Address {
		a := Address{Host: host, Origin: origin, TLS: from}
		a.CACert, a.Cert, a.Key = pem(dir)
		return a
	}
	cases := []struct {
		name       string
		configured string
		env        map[string]string
		want       Address
		channel    Channel
	}{
		{"verified, DOCKER_CERT_PATH", "", map[string]string{"DOCKER_HOST": "tcp://10.0.0.2:2376", "DOCKER_TLS_VERIFY": "1", "DOCKER_CERT_PATH": "/certs"},
			tlsAddr("tcp://10.0.0.2:2376", "DOCKER_HOST", "DOCKER_CERT_PATH /certs", "/certs"), TLSVerified},
		{"verified, the docker config directory", "", map[string]string{"DOCKER_HOST": "tcp://10.0.0.2:2376", "DOCKER_TLS_VERIFY": "1"},
			tlsAddr("tcp://10.0.0.2:2376", "DOCKER_HOST", "the docker config directory "+cfgDir+" (DOCKER_TLS_VERIFY without DOCKER_CERT_PATH)", cfgDir), TLSVerified},
		{"DOCKER_CERT_PATH without DOCKER_TLS_VERIFY is plain", "", map[string]string{"DOCKER_HOST": "tcp://10.0.0.2:2376", "DOCKER_CERT_PATH": "/certs"},
			Address{Host: "tcp://10.0.0.2:2376", Origin: "DOCKER_HOST", CertPathUnused: "/certs"}, Clear},
		{"plain", "", map[string]string{"DOCKER_HOST": "tcp://10.0.0.2:2375"}, Address{Host: "tcp://10.0.0.2:2375", Origin: "DOCKER_HOST"}, Clear},
		{"plain to 127.0.0.1", "", map[string]string{"DOCKER_HOST": "tcp://127.0.0.1:2375"}, Address{Host: "tcp://127.0.0.1:2375", Origin: "DOCKER_HOST"}, ClearLoopback},
		{"plain to localhost", "", map[string]string{"DOCKER_HOST": "tcp://localhost:2375"}, Address{Host: "tcp://localhost:2375", Origin: "DOCKER_HOST"}, ClearLoopback},
		{"plain to ::1", "", map[string]string{"DOCKER_HOST": "tcp://[::1]:2375"}, Address{Host: "tcp://[::1]:2375", Origin: "DOCKER_HOST"}, ClearLoopback},
		{"plain to a name", "", map[string]string{"DOCKER_HOST": "tcp://build.example:2375"}, Address{Host: "tcp://build.example:2375", Origin: "DOCKER_HOST"}, Clear},
		{"a unix socket", "", map[string]string{"DOCKER_HOST": "unix:///run/docker.sock"}, Address{Host: "unix:///run/docker.sock", Origin: "DOCKER_HOST"}, Socket},
		{"a unix socket ignores the config directory", "", map[string]string{"DOCKER_HOST": "unix:///run/docker.sock", "DOCKER_TLS_VERIFY": "1"},
			Address{Host: "unix:///run/docker.sock", Origin: "DOCKER_HOST"}, Socket},
		{"docker.host takes the environment's TLS", "tcp://10.0.0.2:2376", map[string]string{"DOCKER_TLS_VERIFY": "1", "DOCKER_CERT_PATH": "/certs"},
			tlsAddr("tcp://10.0.0.2:2376", "docker.host", "DOCKER_CERT_PATH /certs", "/certs"), TLSVerified},
		{"docker.host plain", "tcp://10.0.0.2:2375", map[string]string{}, Address{Host: "tcp://10.0.0.2:2375", Origin: "docker.host"}, Clear},
		{"docker.host socket", "unix:///run/docker.sock", map[string]string{"DOCKER_TLS_VERIFY": "1"}, Address{Host: "unix:///run/docker.sock", Origin: "docker.host"}, Socket},
		{"a context with TLS", "", map[string]string{"DOCKER_CONTEXT": "tls"}, tlsAddr("tcp://10.0.0.3:2376", "context tls", "context tls", tlsDir), TLSVerified},
		{"a context without TLS", "", map[string]string{"DOCKER_CONTEXT": "plain"}, Address{Host: "tcp://10.0.0.4:2375", Origin: "context plain"}, Clear},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a, err := Resolve(tc.configured, tc.env, home)
			if err != nil || a != tc.want {
				t.Fatalf("Resolve: %+v, %v\nwant %+v", a, err, tc.want)
			}
			if got := a.Channel(); got != tc.channel {
				t.Errorf("Channel: %d, want %d", got, tc.channel)
			}
		})
	}
}

// Over plain TCP to another machine a run that would send a secret is refused, and
// any other run warned of; loopback is warned of only; TLS and a socket pass.
func TestRefuseClear(t *testing.T) {
	plain := Address{Host: "tcp://10.0.0.2:2375", Origin: "DOCKER_HOST"}
	loop := Address{Host: "tcp://127.0.0.1:2375", Origin: "DOCKER_HOST"}
	verified := Address{Host: "tcp://10.0.0.2:2376", Origin: "DOCKER_HOST", TLS: "DOCKER_CERT_PATH /c"}
	sock := Address{Host: "unix:///run/docker.sock", Origin: "default"}
	bare := &isolator.Plan{}
	secret := &isolator.Plan{Secrets: []isolator.Secret{{Name: "TOKEN", EnvSource: "TOKEN"}}}
	agent := &isolator.Plan{SSHAgent: isolator.AgentRelay{Upstream: "/run/a", Socket: "/s/agent"}}
	cred := &isolator.Plan{Egress: egress.Rules{Mode: egress.Proxy}, Proxy: isolator.ProxyConfig{Credentials: []isolator.ProxyCredential{{ValueEnv: "GH"}}}}
	mitm := &isolator.Plan{Egress: egress.Rules{Mode: egress.Proxy}, Proxy: isolator.ProxyConfig{MITM: true}}
	credOff := &isolator.Plan{Proxy: isolator.ProxyConfig{Credentials: []isolator.ProxyCredential{{ValueEnv: "GH"}}}}
	passed := &isolator.Plan{Env: []isolator.EnvVar{{Name: "LANG", Value: "C", FromHost: true}, {Name: "API_TOKEN", Value: "v", FromHost: true, Credential: true}}}
	set := &isolator.Plan{Env: []isolator.EnvVar{{Name: "DB_PASSWORD", Value: "v", Credential: true}}}
	plainVars := &isolator.Plan{Env: []isolator.EnvVar{{Name: "LANG", Value: "C", FromHost: true}, {Name: "MODE", Value: "fast"}}}
	cases := []struct {
		name    string
		a       Address
		p       *isolator.Plan
		refused bool
		warn    string
	}{
		{"plain, a secret", plain, secret, true, ""},
		{"plain, the ssh agent", plain, agent, true, ""},
		{"plain, a proxy credential", plain, cred, true, ""},
		{"plain, the MITM CA", plain, mitm, true, ""},
		{"plain, credentials the proxy does not use", plain, credOff, false, "the docker engine at tcp://10.0.0.2:2375 (DOCKER_HOST) is reached over plain TCP over the network: the project's files and the sandbox's input and output cross unencrypted; " + ClearFix},
		{"plain, a credential passed through", plain, passed, true, ""},
		{"plain, a credential in env.set", plain, set, true, ""},
		{"plain, variables taken for no credential", plain, plainVars, false, "the docker engine at tcp://10.0.0.2:2375 (DOCKER_HOST) is reached over plain TCP over the network: the project's files and the sandbox's input and output cross unencrypted; " + ClearFix},
		{"loopback, a credential passed through", loop, passed, false, "the docker engine at tcp://127.0.0.1:2375 (DOCKER_HOST) is reached over plain TCP on this machine, where any local user who reaches the port controls the engine: the project's files and the sandbox's input and output cross unencrypted; " + ClearFix},
		{"verified, a credential passed through", verified, passed, false, ""},
		{"plain, nothing secret", plain, bare, false, "the docker engine at tcp://10.0.0.2:2375 (DOCKER_HOST) is reached over plain TCP over the network: the project's files and the sandbox's input and output cross unencrypted; " + ClearFix},
		{"loopback, a secret", loop, secret, false, "the docker engine at tcp://127.0.0.1:2375 (DOCKER_HOST) is reached over plain TCP on this machine, where any local user who reaches the port controls the engine: the project's files and the sandbox's input and output cross unencrypted; " + ClearFix},
		{"verified, a secret", verified, secret, false, ""},
		{"socket, a secret", sock, secret, false, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			warn, err := tc.a.RefuseClear(tc.p)
			if tc.refused != (err != nil) || tc.refused && !errors.Is(err, isolator.ErrProtection) {
				t.Fatalf("RefuseClear: %v; want refused %v (ErrProtection)", err, tc.refused)
			}
			if warn != tc.warn {
				t.Errorf("warning:\n%q\nwant\n%q", warn, tc.warn)
			}
		})
	}
	_, err := plain.RefuseClear(secret)
	want := "protection could not be applied: the docker engine at tcp://10.0.0.2:2375 (DOCKER_HOST) is reached over plain TCP, unencrypted and unauthenticated, and this run would send it 1 secret(s) in clear, for anyone on the way to read; " + ClearFix
	if err.Error() != want {
		t.Errorf("refusal:\n%s\nwant\n%s", err, want)
	}
	both := &isolator.Plan{Secrets: secret.Secrets, Env: append(passed.Env, set.Env...)}
	_, err = plain.RefuseClear(both)
	want = "protection could not be applied: the docker engine at tcp://10.0.0.2:2375 (DOCKER_HOST) is reached over plain TCP, unencrypted and unauthenticated, and this run would send it 1 secret(s), " +
		"the host variable API_TOKEN (passed through by value, taken for a credential by its name or its value's form), " +
		"the variable DB_PASSWORD (env.set, taken for a credential by its name or its value's form) in clear, for anyone on the way to read; " + ClearFix +
		"; or, if the command does not need the variable, leave it out (unset it on the host, or drop it from env.passthrough or env.set): passed as a secret (-e NAME) it is refused over plain TCP too"
	if err == nil || err.Error() != want {
		t.Errorf("refusal of credentials by value:\n%v\nwant\n%s", err, want)
	}
}

// Which plain-TCP addresses are this machine: loopback by every spelling, and the
// unspecified address (and an empty host), which Go's dialer, as the docker
// client's, documents as the local system; a name other than localhost is judged
// by its name, so remote (fail closed).
func TestLoopback(t *testing.T) {
	cases := []struct {
		host string
		want Channel
	}{
		{"tcp://127.0.0.1:2375", ClearLoopback},
		{"tcp://127.0.0.2:2375", ClearLoopback},
		{"tcp://127.255.255.254:2375", ClearLoopback},
		{"tcp://localhost:2375", ClearLoopback},
		{"tcp://LocalHost:2375", ClearLoopback},
		{"tcp://[::1]:2375", ClearLoopback},
		{"tcp://[0:0:0:0:0:0:0:1]:2375", ClearLoopback},
		{"tcp://[::ffff:127.0.0.1]:2375", ClearLoopback},
		{"tcp://[::ffff:127.0.0.2]:2375", ClearLoopback},
		{"tcp://0.0.0.0:2375", ClearLoopback},
		{"tcp://[::]:2375", ClearLoopback},
		{"tcp://[::ffff:0.0.0.0]:2375", ClearLoopback},
		{"tcp://:2375", ClearLoopback},
		{"tcp://127.0.0.1:2375/path", ClearLoopback},
		{"tcp://128.0.0.1:2375", Clear},
		{"tcp://10.0.0.2:2375", Clear},
		{"tcp://[::ffff:10.0.0.2]:2375", Clear},
		{"tcp://[::2]:2375", Clear},
		{"tcp://[fe80::1%lo]:2375", Clear},
		{"tcp://localhost.:2375", Clear},
		{"tcp://localhost.example:2375", Clear},
		{"tcp://127.1:2375", Clear},
		{"tcp://build.example:2375", Clear},
		{"tcp://127.0.0.1", Clear}, // no port: not an address enginehost admits; never loopback by accident
	}
	for _, tc := range cases {
		if got := (Address{Host: tc.host}).Channel(); got != tc.want {
			t.Errorf("%s: channel %d, want %d", tc.host, got, tc.want)
		}
	}
}
