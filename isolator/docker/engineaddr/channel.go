package engineaddr

import (
	"fmt"
	"net"
	"strings"

	"github.com/devsandbox/devsandbox/isolator"
)

// Channel is how devsandbox's Docker client reaches the engine, as it will dial it:
// what guards the requests (the project's content, the companion's policy and
// credentials, the ssh agent's stream) on their way.
type Channel int

const (
	// Socket is a Unix socket: this host's file permissions decide who reaches it.
	Socket Channel = iota
	// TLSVerified is tcp:// with TLS: the engine's certificate verified, a client
	// certificate presented (Address.TLS says whose).
	TLSVerified
	// ClearLoopback is tcp:// without TLS to a loopback address: this machine, where
	// any local user who can reach the port controls the engine.
	ClearLoopback
	// Clear is tcp:// without TLS to another address: unencrypted and
	// unauthenticated, over the network.
	Clear
)

// Channel classifies a; an address enginehost.Check admitted is unix:// or tcp://.
func (a Address) Channel() Channel {
	rest, ok := strings.CutPrefix(a.Host, "tcp://")
	switch {
	case !ok:
		return Socket
	case a.TLS != "":
		return TLSVerified
	case loopback(rest):
		return ClearLoopback
	}
	return Clear
}

// loopback reports whether the host part of HOST:PORT[/path] is this machine's:
// localhost, 127.0.0.0/8 or ::1 (IPv4-mapped forms included), and the unspecified
// address (0.0.0.0, ::) or an empty host, which Go's dialer, the docker client's,
// documents as the local system (Linux routes a connection to it over loopback).
// Any other name is judged by its name, not by what it resolves to: remote.
func loopback(hostPort string) bool {
	hostPort, _, _ = strings.Cut(hostPort, "/")
	host, _, err := net.SplitHostPort(hostPort)
	if err != nil {
		return false
	}
	if host == "" || strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && (ip.IsLoopback() || ip.IsUnspecified())
}

// ClearFix is how a user puts the engine behind a protected channel.
const ClearFix = "start the engine with TLS (dockerd --tlsverify) and set DOCKER_TLS_VERIFY=1 and DOCKER_CERT_PATH to the directory of its ca.pem and your cert.pem and key.pem, or forward the engine's socket over ssh (ssh -nNT -L /ABSOLUTE/SOCKET:/var/run/docker.sock HOST) and set DOCKER_HOST=unix:///ABSOLUTE/SOCKET"

// Describe says, for doctor, how the engine is reached.
func (a Address) Describe() string {
	var s string
	switch a.Channel() {
	case Socket:
		s = "a Unix socket on this host"
	case TLSVerified:
		s = "TCP with TLS, the engine's certificate verified (" + a.TLS + ")"
	case ClearLoopback:
		s = "plain TCP to this machine (loopback): unencrypted, and any local user who reaches the port controls the engine"
	case Clear:
		s = "plain TCP: unencrypted and unauthenticated; anyone who reaches the port controls the engine (root on its host) and reads what devsandbox sends it"
	}
	if a.CertPathUnused != "" && a.Channel() != Socket {
		s += "; DOCKER_CERT_PATH is set but DOCKER_TLS_VERIFY is not, so no TLS is used (as with the docker CLI)"
	}
	return s
}

// Exposes lists what a run of p sends the engine that is a secret: secrets'
// values, variables passed by value that are taken for credentials (EnvVar.Credential,
// in the create request's Env), the proxy's credentials and MITM CA key (on the
// companion's stdin), and the ssh agent's stream. Names only, never values.
func Exposes(p *isolator.Plan) []string {
	var out []string
	if n := len(p.Secrets); n > 0 {
		out = append(out, fmt.Sprintf("%d secret(s)", n))
	}
	for _, e := range p.Env {
		switch {
		case !e.Credential:
		case e.FromHost:
			out = append(out, "the host variable "+e.Name+" (passed through by value, taken for a credential by its name or its value's form)")
		default:
			out = append(out, "the variable "+e.Name+" (env.set, taken for a credential by its name or its value's form)")
		}
	}
	if n := len(p.Proxy.Credentials); n > 0 && p.Egress.NeedsProxy() {
		out = append(out, fmt.Sprintf("%d proxy credential(s)", n))
	}
	if p.Proxy.MITM && p.Egress.NeedsProxy() {
		out = append(out, "the proxy's MITM CA key")
	}
	if p.SSHAgent.Socket != "" {
		out = append(out, "the ssh agent's requests and signatures")
	}
	return out
}

// RefuseClear judges a run of p against an engine reached without protection: over
// plain TCP to another machine, a run that would send a secret (Exposes) is refused
// (wraps isolator.ErrProtection: 125); any other run over plain TCP, loopback
// included, goes ahead with warn saying what crosses in clear and the fix.
func (a Address) RefuseClear(p *isolator.Plan) (warn string, err error) {
	ch := a.Channel()
	if ch == Socket || ch == TLSVerified {
		return "", nil
	}
	if x := Exposes(p); ch == Clear && len(x) > 0 {
		fix := ClearFix
		if credentialVars(p) {
			fix += "; or, if the command does not need the variable, leave it out (unset it on the host, or drop it from env.passthrough or env.set): passed as a secret (-e NAME) it is refused over plain TCP too"
		}
		return "", fmt.Errorf("%w: the docker engine at %s (%s) is reached over plain TCP, unencrypted and unauthenticated, and this run would send it %s in clear, for anyone on the way to read; %s",
			isolator.ErrProtection, a.Host, a.Origin, strings.Join(x, ", "), fix)
	}
	where := "over the network"
	if ch == ClearLoopback {
		where = "on this machine, where any local user who reaches the port controls the engine"
	}
	return fmt.Sprintf("the docker engine at %s (%s) is reached over plain TCP %s: the project's files and the sandbox's input and output cross unencrypted; %s", a.Host, a.Origin, where, ClearFix), nil
}

// credentialVars reports whether p passes a variable taken for a credential by value.
func credentialVars(p *isolator.Plan) bool {
	for _, e := range p.Env {
		if e.Credential {
			return true
		}
	}
	return false
}
