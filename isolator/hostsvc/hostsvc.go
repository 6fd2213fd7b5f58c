// Package hostsvc starts what a run of a Plan needs on the host besides the sandbox
// itself: the project's socket directory (package sockdir), the ssh agent's filtering
// relay (package sshagent), the relay of published ports (package publish), the session's filtering proxy (package proxy/service) and
// the watch over what the sandbox writes that the host trusts (package watch). Every
// isolator's Run starts them, so a library user of Run gets them too; Render never
// does, so a --dry-run starts and writes nothing.
package hostsvc

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/isolator/publish"
	"github.com/devsandbox/devsandbox/isolator/sockdir"
	"github.com/devsandbox/devsandbox/isolator/sshagent"
	"github.com/devsandbox/devsandbox/isolator/watch"
	"github.com/devsandbox/devsandbox/proxy/service"
)

// Options are the caller's hooks; the zero value discards warnings and phases.
type Options struct {
	// Warn receives warnings for people (the watch's findings, a session proxy that
	// did not start).
	Warn func(msg string)
	// Stderr is the session proxy's standard error (the run's Stdio.Err; nil:
	// discarded). Nothing here writes to this process's own streams.
	Stderr io.Writer
	// Phase, when set, is called as each launch phase ends (for --debug timings).
	Phase func(name string)
	// Proxy starts the session proxy; nil is service.Start (devsandbox-proxy on this
	// host).
	Proxy func(p *isolator.Plan) (stop func(), err error)
	// EngineEgress: the backend runs the session's proxy and published ports where
	// its engine is (docker); only the watch runs here.
	EngineEgress bool
	// EngineAgent: the backend carries the sandbox's ssh agent connections to this
	// host itself (docker: over the Engine API, sshagent.ServeStream); no relay
	// socket is served here.
	EngineAgent bool
	// AgentKey, when set, is the key the relay answers probes with
	// (sshagent.Relay.Key): docker's engine binds its socket, and the init proves it.
	AgentKey []byte
	// Listeners asks for a proxy that also serves listening sockets handed to it with
	// Services.HandListener (Linux, the default Proxy only).
	Listeners bool
}

// Services are the running host services of one run.
type Services struct {
	watch     *watch.Watcher
	stops     []func()         // in the order they are to stop
	listeners *os.File         // the host end of the proxy's listener channel, or nil
	trigger   *service.Trigger // starts the proxy when a handed listener has a connection
	release   func()           // the session's hold on its socket directory, or nil
}

// Start starts the host services p needs, in this order: the socket directory (made
// private, held for the session, cleared of what killed sessions left; only when the
// session binds a socket there), the ssh agent's relay (unless EngineAgent: bwrap and krun bind its socket), then,
// unless EngineEgress, the published ports and the session proxy, then the watch, which records the baseline the sandbox's writes are judged
// against. On an error nothing is left running. Stop them once the sandbox is gone.
func Start(p *isolator.Plan, o Options) (*Services, error) {
	s := &Services{}
	if err := s.socketDir(p, o); err != nil {
		return nil, err
	}
	if p.SSHAgent.Socket != "" && !o.EngineAgent {
		stop, err := startAgent(p, o.AgentKey)
		if err != nil {
			s.Stop()
			return nil, fmt.Errorf("%w: the ssh agent's relay: %w; unset SSH_AUTH_SOCK or set tools.ssh.enabled = false to run without the agent", isolator.ErrProtection, err)
		}
		s.stops = append(s.stops, stop)
	}
	if !o.EngineEgress {
		if err := s.startEgress(p, o); err != nil {
			s.Stop()
			return nil, err
		}
	}
	warn := o.Warn
	if warn == nil {
		warn = func(string) {}
	}
	s.watch = watch.Start(p, warn)
	return s, nil
}

// socketDir makes the socket directory private and sweeps it, when the session binds
// a socket there.
func (s *Services) socketDir(p *isolator.Plan, o Options) error {
	if d := p.Egress.SocketDir; d != "" && bindsSockets(p, o) {
		got, release, err := holdSocketDir(d, p)
		if err != nil {
			return err
		}
		s.release = release
		if got != d {
			adoptSocketDir(p, d, got)
		}
		sockdir.Sweep(got) // once per launch, before this session adds its own sockets
	}
	return nil
}

// holdSocketDir makes the socket directory d (sockdir.Ensure) and holds it for the
// session (sockdir.Hold): `sandboxes prune` removes only one nobody holds. One removed
// between the two is made anew, a few times.
func holdSocketDir(d string, p *isolator.Plan) (got string, release func(), err error) {
	for range 3 {
		if got, err = sockdir.Ensure(d, p.StateDir, p.Project.ID, p.User.UID); err != nil {
			return "", nil, err
		}
		if release, err = sockdir.Hold(got); !errors.Is(err, sockdir.ErrGone) {
			return got, release, err
		}
	}
	return "", nil, fmt.Errorf("%w: %w; run again", isolator.ErrProtection, err)
}

// startEgress starts the published ports and the proxy.
func (s *Services) startEgress(p *isolator.Plan, o Options) error {
	if len(p.Egress.Forwards) > 0 {
		stop, err := publish.Start(p)
		if err != nil {
			return err
		}
		s.stops = append(s.stops, stop)
	}
	if p.Egress.NeedsProxy() {
		start := o.Proxy
		if start == nil {
			so := service.Options{Stderr: o.Stderr, Warn: o.Warn}
			if o.Listeners {
				var err error
				if s.listeners, so.Listeners, err = service.NewListenerChannel(); err != nil {
					s.Stop()
					return fmt.Errorf("%w: %w", isolator.ErrProtection, err)
				}
				if so.Trigger, err = service.NewTrigger(); err != nil {
					so.Listeners.Close()
					s.Stop()
					return fmt.Errorf("%w: the egress proxy: %w", isolator.ErrProtection, err)
				}
				s.trigger = so.Trigger
				// The sandbox reaches the proxy only on the listeners handed to it.
				so.NoSocket = true
			}
			start = func(p *isolator.Plan) (func(), error) { return service.Start(p, so) }
		}
		stop, err := start(p)
		if err != nil {
			s.Stop()
			return err
		}
		// The proxy stops first: it flushes its audit log while the ports still relay.
		s.stops = append([]func(){stop}, s.stops...)
		if o.Phase != nil {
			o.Phase("proxy")
		}
	}
	return nil
}

// startAgent serves the session's ssh agent relay in the socket directory's agent
// directory, which it makes.
func startAgent(p *isolator.Plan, key []byte) (stop func(), err error) {
	kept := p.SSHAgent.Socket == sockdir.KeptAgentSocket(p.Egress.SocketDir, p.Proxy.Session)
	if err := sockdir.EnsureAgentDir(p.Egress.SocketDir, p.User.UID, kept); err != nil {
		return nil, err
	}
	return sshagent.Serve(p.SSHAgent.Socket, p.SSHAgent.Upstream, key, sockdir.Listen)
}

// bindsSockets reports whether the session puts sockets in p's socket directory: the
// published ports' relay does, and so does the proxy, unless it serves only the
// listeners handed to it (the default Proxy with Listeners: it binds no socket). A
// session that puts nothing there neither makes nor sweeps it (a mkdir, the checks of
// its path, two directory reads and a dial per stale socket, on the launch's path);
// the next session that binds one there sweeps what killed sessions left.
func bindsSockets(p *isolator.Plan, o Options) bool {
	if p.SSHAgent.Socket != "" && !o.EngineAgent {
		return true
	}
	if o.EngineEgress {
		return false // the engine's side serves the proxy and the published ports
	}
	return len(p.Egress.Forwards) > 0 || (p.Egress.NeedsProxy() && (o.Proxy != nil || !o.Listeners))
}

// HandListener hands ln, a listening TCP socket, to the session proxy, which serves it
// until it stops; the caller should close its own copy. The first connection pending
// on ln starts the proxy, if nothing has yet (service.Start). It fails when the proxy
// was not started with Options.Listeners.
func (s *Services) HandListener(ln *os.File) error {
	if s == nil || s.listeners == nil {
		return errors.New("the session proxy takes no listeners")
	}
	if err := s.trigger.Watch(ln); err != nil {
		return fmt.Errorf("watching the proxy's listener: %w", err)
	}
	return service.SendListener(s.listeners, ln)
}

// Stop stops the services: the watch first (its final check of what the sandbox
// wrote), then the proxy, then the published ports. It may be called on a nil
// Services.
func (s *Services) Stop() {
	if s == nil {
		return
	}
	if s.watch != nil {
		s.watch.Stop()
		s.watch = nil
	}
	for _, stop := range s.stops {
		stop()
	}
	s.stops = nil
	if s.listeners != nil {
		s.listeners.Close()
		s.listeners = nil
	}
	if s.release != nil { // last: the sockets in the directory are closed
		s.release()
		s.release = nil
	}
}

// adoptSocketDir moves p's session sockets from the socket directory it chose, from,
// to the one sockdir.Ensure returned, to (another session's, recorded first): nothing
// is bound in from yet.
func adoptSocketDir(p *isolator.Plan, from, to string) {
	p.Egress.SocketDir = to
	s := p.Proxy.Session
	if p.Egress.PublishDir == sockdir.PublishDir(from, s) {
		p.Egress.PublishDir = sockdir.PublishDir(to, s)
	}
	if p.Egress.Proxy.Unix == sockdir.ProxySocket(from, s) {
		p.Egress.Proxy.Unix = sockdir.ProxySocket(to, s)
	}
	if old := p.SSHAgent.Socket; old == sockdir.KeptAgentSocket(from, s) {
		p.SSHAgent.Socket = sockdir.KeptAgentSocket(to, s)
	} else if old == sockdir.AgentSocket(from, s) {
		p.SSHAgent.Socket = sockdir.AgentSocket(to, s)
		for i := range p.Mounts {
			if p.Mounts[i].Kind == isolator.Bind && p.Mounts[i].Source == old {
				p.Mounts[i].Source = p.SSHAgent.Socket
			}
		}
	}
}
