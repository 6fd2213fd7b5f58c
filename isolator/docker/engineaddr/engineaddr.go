// Package engineaddr finds the Docker engine devsandbox talks to: docker.host, else
// DOCKER_HOST, else the current docker CLI context, else the default socket. It
// imports no Docker client, so the bwrap-only devsandbox binary can use it to decide
// whether docker is usable without paying the client's start-up cost.
package engineaddr

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/devsandbox/devsandbox/internal/enginehost"
	"github.com/devsandbox/devsandbox/isolator"
)

// DefaultHost is the engine address when nothing else is configured.
const DefaultHost = "unix:///var/run/docker.sock"

// Address says which engine to talk to and where that choice came from.
type Address struct {
	Host   string // e.g. unix:///var/run/docker.sock, tcp://host:2376
	Origin string // docker.host, DOCKER_HOST, context NAME, default
	// TLS names where the TLS material came from ("DOCKER_CERT_PATH /dir", "context
	// NAME"); "" for no TLS. With TLS the client verifies the engine's certificate
	// (against CACert, else the system's roots) and presents Cert and Key: devsandbox
	// never speaks TLS without verifying.
	TLS string
	// TLS material from the docker context or DOCKER_CERT_PATH; empty for none.
	CACert, Cert, Key string
	// CertPathUnused is DOCKER_CERT_PATH when DOCKER_TLS_VERIFY is not set: the docker
	// CLI then speaks plain TCP, and so does devsandbox; doctor says so.
	CertPathUnused string

	// pin is the engine's Unix socket held open once Pin checked it; nil before.
	pin *pinned
}

// unixSocket is the socket path of a unix:// host.
func unixSocket(host string) (string, bool) { return strings.CutPrefix(host, "unix://") }

// Local reports whether bind mounts of host paths reach this machine's files: a Unix
// socket on Linux, and, once the address is pinned (Pin), one whose listener is an
// engine's own process on this machine (dockerd, a systemd's socket unit for it, or
// podman's service, root's or the user's, in this machine's root directory),
// asked of the pinned socket once. A socket that a relay serves (ssh -L to a remote
// engine, socat, Docker Desktop's backend), or whose listener cannot be told (in a
// PID namespace this one does not see: a job container given the host's socket,
// whose binds would name the host's paths), is not local, so binds take the remote
// path. Docker Desktop on macOS shares only some paths and is slow there, so the home
// is a named volume when this is false.
func (a Address) Local() bool {
	sock, ok := unixSocket(a.Host)
	if runtime.GOOS != "linux" || !ok {
		return false
	}
	return a.pin == nil || a.pin.peerOf(sock, "/proc").binds
}

// LocalWhy says why Local is what it is, for doctor: the address's form, or, on a
// pinned Unix socket on Linux, who listens on it (asked once, as Local asks).
func (a Address) LocalWhy() string { return a.localWhy("/proc") }

// localWhy is LocalWhy with /proc at proc (tests give another).
func (a Address) localWhy(proc string) string {
	sock, ok := unixSocket(a.Host)
	switch {
	case !ok:
		return "not a Unix socket: the engine runs on another machine (or a virtual machine), which binds its own files"
	case runtime.GOOS != "linux":
		return "not Linux: the engine runs in a virtual machine (Docker Desktop), which shares only some of this machine's files"
	case a.pin == nil:
		return "a Unix socket on Linux (not asked who listens: the socket is not pinned)"
	}
	p := a.pin.peerOf(sock, proc)
	switch {
	case p.binds && p.name == podmanService:
		return p.who + ", podman's Docker-compatible service on this machine, in this machine's root directory: it binds this machine's files"
	case p.name == podmanService:
		return p.who + ", podman's Docker-compatible service, but another user's or in another root directory (or one that cannot be read): not taken for one that binds this machine's files"
	case p.binds:
		return p.who + ", the engine's own process on this machine"
	case !p.named:
		return p.who + ": a listener that cannot be told counts as not local"
	}
	return p.who + ", not dockerd, a systemd socket unit or podman's service: a relay (ssh -L, socat, Docker Desktop's backend) to an engine whose files may be another machine's"
}

// Resolve picks the engine per DESIGN: docker.host, else DOCKER_HOST, else the
// current docker context (DOCKER_CONTEXT or ~/.docker/config.json), else the default
// socket. env is the host environment (config.Host.Vars); home the host home. An
// address from DOCKER_HOST or a context is judged as docker.host is when the
// configuration loads (enginehost.Check): an ssh:// one fails here, naming its place
// and the fix, not later as an engine that does not answer.
func Resolve(configured string, env map[string]string, home string) (Address, error) {
	if configured != "" {
		a := Address{Host: configured, Origin: "docker.host"}
		if strings.HasPrefix(configured, "tcp://") {
			envTLS(&a, env, home)
		}
		return a, nil
	}
	if h := env["DOCKER_HOST"]; h != "" {
		if err := enginehost.Check(h, enginehost.EnvVar); err != nil {
			return Address{}, fmt.Errorf("env DOCKER_HOST: %w", err)
		}
		a := Address{Host: h, Origin: "DOCKER_HOST"}
		envTLS(&a, env, home)
		return a, nil
	}
	if name, dir := enginehost.Context(env, home); name != "" {
		return fromContext(dir, name)
	}
	return Address{Host: DefaultHost, Origin: "default"}, nil
}

// envTLS gives a the TLS material the docker CLI takes from the environment:
// DOCKER_TLS_VERIFY set means TLS, the engine verified against ca.pem and cert.pem and
// key.pem presented, from DOCKER_CERT_PATH, else (for a tcp:// engine) from the docker
// config directory (DOCKER_CONFIG, else ~/.docker) as the CLI does. DOCKER_CERT_PATH
// alone turns no TLS on, in the CLI as here; it is noted for doctor.
func envTLS(a *Address, env map[string]string, home string) {
	dir := env["DOCKER_CERT_PATH"]
	if env["DOCKER_TLS_VERIFY"] == "" {
		a.CertPathUnused = dir
		return
	}
	a.TLS = "DOCKER_CERT_PATH " + dir
	if dir == "" {
		if !strings.HasPrefix(a.Host, "tcp://") {
			a.TLS = ""
			return
		}
		if dir = env["DOCKER_CONFIG"]; dir == "" {
			dir = filepath.Join(home, ".docker")
		}
		a.TLS = "the docker config directory " + dir + " (DOCKER_TLS_VERIFY without DOCKER_CERT_PATH)"
	}
	a.CACert, a.Cert, a.Key = filepath.Join(dir, "ca.pem"), filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
}

// fromContext reads the docker endpoint of a docker CLI context.
func fromContext(cfgDir, name string) (Address, error) {
	host, err := enginehost.ContextHost(cfgDir, name)
	if err != nil {
		return Address{}, fmt.Errorf("docker context %q: %w", name, err)
	}
	a := Address{Host: host, Origin: "context " + name}
	// The CLI speaks TLS to a context with TLS material: its CA (else the system's
	// roots) and its client certificate. devsandbox verifies the engine even where
	// the context says SkipTLSVerify.
	tls := filepath.Join(cfgDir, "contexts", "tls", enginehost.ContextID(name), "docker")
	if _, err := os.Stat(filepath.Join(tls, "ca.pem")); err == nil {
		a.CACert, a.TLS = filepath.Join(tls, "ca.pem"), "context "+name
	}
	if _, err := os.Stat(filepath.Join(tls, "cert.pem")); err == nil {
		a.Cert, a.Key, a.TLS = filepath.Join(tls, "cert.pem"), filepath.Join(tls, "key.pem"), "context "+name
	}
	return a, nil
}

// SubpathAPI is the first Engine API version (Docker 26) with a volume's sub-path
// (VolumeOptions.Subpath), which the engine resolves without following a symlink out
// of the volume: a directory anchor is mounted that way on such an engine, wherever
// it runs.
const SubpathAPI = "1.45"

// RefuseAnchors refuses a Plan with a writable anchor (isolator.Mount.Anchor: a bind
// whose source lies where a sandbox can write, such as a repository's .git) for an
// engine that speaks API apiVersion, older than SubpathAPI, and does not share this
// host's processes and files: it could bind such a directory only by path, and after
// a concurrent session swapped that path for a symlink it would bind where the link
// leads, writable, and make the mount points in it there, on the host. A read-only
// anchor goes to such an engine as content instead (the launch reads it from what it
// pinned); a local engine that old is given the directory devsandbox pinned; a newer
// engine mounts a sub-path of a volume.
func (addr Address) RefuseAnchors(p *isolator.Plan, apiVersion string) error {
	if addr.Local() || !APIBefore(apiVersion, SubpathAPI) {
		return nil
	}
	for _, m := range p.Mounts {
		if m.Kind == isolator.Bind && m.Anchor && !m.ReadOnly {
			return fmt.Errorf("%w: %s holds %s and is mounted writable (%s) where a sandbox can write; the docker engine at %s (%s) speaks API %s, older than %s (Docker 26), and does not share this host's files, so it could bind it only by path, which a concurrent session can swap for a symlink: the engine would then bind where the link leads and make the mount points in it there, on the host. Upgrade the engine to Docker 26 or newer (Docker Desktop 4.29 or newer), use an engine on this host (unix socket), or `--isolator bwrap`",
				isolator.ErrProtection, m.Source, maskUnder(p, m.Source), m.Why, addr.Host, addr.Origin, apiVersion, SubpathAPI)
		}
	}
	return nil
}

// APIBefore reports whether Engine API version v is older than min; an unreadable v
// is.
func APIBefore(v, min string) bool {
	var a1, a2, b1, b2 int
	if _, err := fmt.Sscanf(v, "%d.%d", &a1, &a2); err != nil {
		return true
	}
	_, _ = fmt.Sscanf(min, "%d.%d", &b1, &b2)
	return a1 < b1 || a1 == b1 && a2 < b2
}

// maskUnder names a mount below dir, for the message.
func maskUnder(p *isolator.Plan, dir string) string {
	for _, m := range p.Mounts {
		if t := m.Target(p.User.HostHome); t != dir && isolator.Within(t, dir) {
			return t + ", " + m.Why
		}
	}
	return "nothing else mounted"
}
