package hostsvc

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/devsandbox/devsandbox/egress"
	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/isolator/sockdir"
)

// proxyPlan is a proxy-mode Plan whose socket directory is <state>/sock, with a
// stand-in devsandbox-proxy next to its init (never started: nothing connects).
func proxyPlan(t *testing.T) *isolator.Plan {
	t.Helper()
	root := t.TempDir()
	bin := filepath.Join(root, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "devsandbox-proxy"), nil, 0o755); err != nil {
		t.Fatal(err)
	}
	p := &isolator.Plan{StateDir: filepath.Join(root, "state"), Self: filepath.Join(bin, "devsandbox-init")}
	p.Project.ID, p.Project.Dir, p.User.UID = "id", t.TempDir(), os.Getuid()
	p.Egress.Mode = egress.Proxy
	p.Egress.SocketDir = filepath.Join(p.StateDir, "sock")
	p.Egress.Proxy.Unix = sockdir.ProxySocket(p.Egress.SocketDir, "s1")
	return p
}

// TestSocketDirOnlyWhenBound: a session whose proxy serves only the listeners handed
// to it (bwrap's) binds nothing in the socket directory, so it does not make it; a
// proxy that binds its socket there gets it made private and swept of a socket a
// killed session left.
func TestSocketDirOnlyWhenBound(t *testing.T) {
	t.Run("handed listeners", func(t *testing.T) {
		p := proxyPlan(t)
		s, err := Start(p, Options{Listeners: true})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Stop()
		if _, err := os.Lstat(p.Egress.SocketDir); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("the socket directory of a session that binds nothing there: Lstat = %v, want it absent", err)
		}
	})
	t.Run("another session's directory, recorded first", func(t *testing.T) {
		// The socket directory in TMPDIR: a session that started with this one
		// recorded its own first; this one's sockets go there, and its own
		// directory is not made.
		p := proxyPlan(t)
		tmp, err := os.MkdirTemp("", "dsb")
		if err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(tmp)
		first, mine := filepath.Join(tmp, fmt.Sprintf("devsandbox-%d-first000", p.User.UID)), filepath.Join(tmp, fmt.Sprintf("devsandbox-%d-mine0000", p.User.UID))
		if err := os.Mkdir(first, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(p.StateDir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(p.StateDir, "sock-dir"), []byte(first+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		p.Proxy.Session = "s1"
		p.Egress.SocketDir, p.Egress.Proxy.Unix = mine, sockdir.ProxySocket(mine, "s1")
		s, err := Start(p, Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Stop()
		if p.Egress.SocketDir != first || p.Egress.Proxy.Unix != sockdir.ProxySocket(first, "s1") {
			t.Errorf("the session's socket directory %s, proxy socket %s; want them in %s", p.Egress.SocketDir, p.Egress.Proxy.Unix, first)
		}
		if fi, err := os.Lstat(sockdir.ProxySocket(first, "s1")); err != nil || fi.Mode().Type() != fs.ModeSocket {
			t.Errorf("the session's proxy socket in the recorded directory: %v, %v", fi, err)
		}
		if _, err := os.Lstat(mine); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("the directory the session chose: Lstat = %v, want it absent", err)
		}
	})
	t.Run("proxy socket", func(t *testing.T) {
		p := proxyPlan(t)
		if err := os.MkdirAll(p.Egress.SocketDir, 0o755); err != nil {
			t.Fatal(err)
		}
		// A killed session's socket: nothing listens on it any more.
		old := sockdir.ProxySocket(p.Egress.SocketDir, "killed")
		ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: old, Net: "unix"})
		if err != nil {
			t.Fatal(err)
		}
		ln.SetUnlinkOnClose(false)
		ln.Close()
		s, err := Start(p, Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Stop()
		fi, err := os.Lstat(p.Egress.SocketDir)
		if err != nil || fi.Mode().Perm() != 0o700 {
			t.Errorf("the socket directory: %v, %v; want a directory of mode 0700", fi, err)
		}
		if _, err := os.Lstat(old); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("the killed session's socket was not swept: Lstat = %v", err)
		}
		if fi, err := os.Lstat(p.Egress.Proxy.Unix); err != nil || fi.Mode().Type() != fs.ModeSocket {
			t.Errorf("the session's proxy socket: %v, %v", fi, err)
		}
	})
}

// TestAgentRelay: the ssh agent's relay runs for every backend that binds its socket
// (an engine's egress included), in the socket directory, which it makes private; Stop removes its
// socket. When another session's socket directory is adopted, the agent's bind
// follows the relay there.
func TestAgentRelay(t *testing.T) {
	for _, tc := range []struct {
		name   string
		opts   Options
		adopts bool
	}{
		{"engine egress", Options{EngineEgress: true}, false},
		{"host egress", Options{Listeners: true}, false},
		{"adopted directory", Options{EngineEgress: true}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := proxyPlan(t)
			p.Egress.Mode = egress.None
			p.Proxy.Session = "s1"
			dir := p.Egress.SocketDir
			if tc.adopts {
				tmp, err := os.MkdirTemp("", "dsb")
				if err != nil {
					t.Fatal(err)
				}
				defer os.RemoveAll(tmp)
				dir = filepath.Join(tmp, fmt.Sprintf("devsandbox-%d-first000", p.User.UID))
				if err := os.Mkdir(dir, 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.MkdirAll(p.StateDir, 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(p.StateDir, "sock-dir"), []byte(dir+"\n"), 0o600); err != nil {
					t.Fatal(err)
				}
				p.Egress.SocketDir = filepath.Join(tmp, fmt.Sprintf("devsandbox-%d-mine0000", p.User.UID))
			}
			sock := sockdir.AgentSocket(p.Egress.SocketDir, "s1")
			p.SSHAgent = isolator.AgentRelay{Upstream: filepath.Join(t.TempDir(), "agent.sock"), Socket: sock}
			p.Mounts = []isolator.Mount{{Kind: isolator.Bind, Source: sock, Dest: "/run/devsandbox/ssh-agent.sock"}}
			s, err := Start(p, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			want := sockdir.AgentSocket(dir, "s1")
			if p.SSHAgent.Socket != want || p.Mounts[0].Source != want {
				t.Errorf("the relay's socket %s, the bind's source %s; want %s", p.SSHAgent.Socket, p.Mounts[0].Source, want)
			}
			if fi, err := os.Lstat(want); err != nil || fi.Mode().Type() != fs.ModeSocket || fi.Mode().Perm() != 0o600 {
				t.Errorf("the relay's socket: %v, %v; want a socket of mode 0600", fi, err)
			}
			if fi, err := os.Lstat(dir); err != nil || fi.Mode().Perm() != 0o700 {
				t.Errorf("the socket directory: %v, %v; want mode 0700", fi, err)
			}
			s.Stop()
			if _, err := os.Lstat(want); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("the relay's socket after Stop: Lstat = %v, want it gone", err)
			}
		})
	}
}

// TestAgentRelayFailsClosed: a relay that cannot listen fails the run, naming why.
func TestAgentRelayFailsClosed(t *testing.T) {
	p := proxyPlan(t)
	p.Egress.Mode = egress.None
	p.Proxy.Session = "s1"
	sock := sockdir.AgentSocket(p.Egress.SocketDir, "s1")
	// Something in the socket's place that the sweep leaves (it removes only what
	// refuses connections and can be removed).
	if err := os.MkdirAll(filepath.Join(sock, "x"), 0o700); err != nil {
		t.Fatal(err)
	}
	p.SSHAgent = isolator.AgentRelay{Upstream: "/nonexistent", Socket: sock}
	s, err := Start(p, Options{EngineEgress: true})
	if err == nil {
		s.Stop()
		t.Fatal("Start succeeded with the relay's socket taken")
	}
	if !errors.Is(err, isolator.ErrProtection) {
		t.Errorf("error %v: want the ErrProtection class", err)
	}
}

// TestEngineAgent: a backend that carries the agent's connections itself (docker)
// gets no relay socket and, needing no other socket, no socket directory.
func TestEngineAgent(t *testing.T) {
	p := proxyPlan(t)
	p.Egress.Mode = egress.None
	p.Proxy.Session = "s1"
	sock := sockdir.AgentSocket(p.Egress.SocketDir, "s1")
	p.SSHAgent = isolator.AgentRelay{Upstream: filepath.Join(t.TempDir(), "agent.sock"), Socket: sock}
	s, err := Start(p, Options{EngineEgress: true, EngineAgent: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	if _, err := os.Lstat(p.Egress.SocketDir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the socket directory: Lstat = %v, want none made", err)
	}
}
