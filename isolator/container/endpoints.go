package container

import (
	"fmt"
	"path/filepath"

	"github.com/devsandbox/devsandbox/egress"
	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/isolator/sandboxinit/wire"
	"github.com/devsandbox/devsandbox/proxy/companion"
)

// egressEndpoints adds the session proxy's socket and the publish directory. A
// one-shot container binds the session's socket and its init forwards
// SandboxProxyAddr to it, as bwrap's init does. A kept container outlives sessions: it
// binds the project's socket directory, and its keeper forwards SandboxProxyAddr to
// the proxy there of the session the connecting process belongs to (sessions share
// the egress policy, which is part of the spec, but not the credentials' values nor
// the audit log). Published ports are served from the session's directory. It
// returns the kept session's published ports and its proxy socket's name.
func (l *Layout) egressEndpoints(p *isolator.Plan, o Options, man *wire.Manifest) (sessionPublish []string, proxySocket string) {
	if o.Shipped {
		// Nothing of this host's: a kept container without a proxy or published
		// ports binds no socket directory either (the docker isolator carries the
		// ssh agent itself, which alone sets one).
		return l.engineEndpoints(p, o, man)
	}
	switch {
	case o.Keep && p.Egress.SocketDir != "":
		l.Mounts = append(l.Mounts, Mount{Type: Bind, Source: p.Egress.SocketDir, Target: EndpointDir})
		if p.Egress.NeedsProxy() {
			man.ForwardDir = egress.SandboxProxyAddr + "=" + EndpointDir
			proxySocket = filepath.Base(p.Egress.Proxy.Unix)
		}
		for _, f := range p.Egress.Forwards {
			sessionPublish = append(sessionPublish, fmt.Sprintf("%d=%s/%s/%d.sock", f.SandboxPort, EndpointDir, filepath.Base(p.Egress.PublishDir), f.SandboxPort))
		}
	case p.Egress.NeedsProxy():
		l.Mounts = append(l.Mounts, Mount{Type: Bind, Source: p.Egress.Proxy.Unix, Target: ProxySocket})
		man.Forward = egress.SandboxProxyAddr + "=" + ProxySocket
	}
	if !o.Keep && len(p.Egress.Forwards) > 0 {
		// The host relays 127.0.0.1:HOST_PORT to <SANDBOX_PORT>.sock in the publish
		// directory, where the init serves it and relays to 127.0.0.1:SANDBOX_PORT.
		l.Mounts = append(l.Mounts, Mount{Type: Bind, Source: p.Egress.PublishDir, Target: PublishDir})
		for _, f := range p.Egress.Forwards {
			man.Publish = append(man.Publish, fmt.Sprintf("%d=%s/%d.sock", f.SandboxPort, PublishDir, f.SandboxPort))
		}
	}
	return sessionPublish, proxySocket
}

// engineEndpoints adds the endpoint volume the container shares with the session's
// companion: the companion's proxy listens there on the session's socket, and the
// init serves the published ports in the session's publish directory there, which
// the companion relays the engine's published ports to. A kept container's keeper
// forwards SandboxProxyAddr to the proxy of the connecting process's session.
func (l *Layout) engineEndpoints(p *isolator.Plan, o Options, man *wire.Manifest) (sessionPublish []string, proxySocket string) {
	if !p.Egress.NeedsProxy() && len(p.Egress.Forwards) == 0 {
		return nil, ""
	}
	l.Mounts = append(l.Mounts, Mount{Type: Volume, Source: o.EndpointVolume, Target: EndpointDir})
	session := p.Proxy.Session
	switch {
	case o.Keep && p.Egress.NeedsProxy():
		man.ForwardDir = egress.SandboxProxyAddr + "=" + EndpointDir
		proxySocket = companion.ProxySocket(session)
	case p.Egress.NeedsProxy():
		man.Forward = egress.SandboxProxyAddr + "=" + EndpointDir + "/" + companion.ProxySocket(session)
	}
	for _, f := range p.Egress.Forwards {
		sock := fmt.Sprintf("%d=%s/%s/%s", f.SandboxPort, EndpointDir, companion.PublishDir(session), companion.PublishSocket(int(f.SandboxPort)))
		if o.Keep {
			sessionPublish = append(sessionPublish, sock)
		} else {
			man.Publish = append(man.Publish, sock)
		}
	}
	return sessionPublish, proxySocket
}

// endpointsOK checks that p has what its egress endpoints need with o.
func endpointsOK(p *isolator.Plan, o Options) error {
	switch p.Egress.Mode {
	case egress.Open, egress.None, egress.Proxy, egress.Allowlist:
	default:
		return fmt.Errorf("unknown egress mode %q", p.Egress.Mode)
	}
	needed := p.Egress.NeedsProxy() || len(p.Egress.Forwards) > 0
	switch {
	case o.EndpointVolume != "" && !o.Shipped:
		return fmt.Errorf("an endpoint volume is for a shipped container only")
	case o.Shipped && needed && o.EndpointVolume == "":
		return fmt.Errorf("egress mode %s and published ports need the companion's endpoint volume", p.Egress.Mode)
	case o.Shipped && needed && p.Proxy.Session == "":
		return fmt.Errorf("egress mode %s and published ports need the session's id", p.Egress.Mode)
	case o.Shipped:
	case p.Egress.NeedsProxy() && p.Egress.Proxy.Unix == "":
		return fmt.Errorf("egress mode %s needs the session proxy's Unix socket", p.Egress.Mode)
	case o.Keep && p.Egress.SocketDir == "" && needed:
		return fmt.Errorf("a kept container needs the project's socket directory for its proxy endpoint and published ports")
	case len(p.Egress.Forwards) > 0 && p.Egress.PublishDir == "":
		return fmt.Errorf("published ports need the session's publish directory")
	}
	return nil
}
