package publish

import (
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/devsandbox/devsandbox/egress"
	"github.com/devsandbox/devsandbox/isolator"
)

// Start refuses a publish directory that is a link (one a sandbox of the session
// before left at its name, say): the published port would relay to the sockets of
// whatever directory it names, a host directory's.
func TestStartRefusesLinkedPublishDir(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "elsewhere")
	if err := os.Mkdir(target, 0o700); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("unix", filepath.Join(target, "80.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_, _ = c.Write([]byte("HOST-SOCKET"))
			c.Close()
		}
	}()
	pub := filepath.Join(dir, "publish")
	if err := os.Symlink(target, pub); err != nil {
		t.Fatal(err)
	}
	free, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := uint16(free.Addr().(*net.TCPAddr).Port)
	free.Close()

	p := &isolator.Plan{}
	p.Egress.SocketDir, p.Egress.PublishDir = dir, pub
	p.Egress.Forwards = []egress.Forward{{HostPort: port, SandboxPort: 80}}
	stop, err := Start(p)
	if err == nil {
		defer stop()
		c, err := net.DialTimeout("tcp", free.Addr().String(), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		got, _ := io.ReadAll(c)
		c.Close()
		t.Errorf("Start took the link %s to %s as the publish directory; the host's port %d reached %q", pub, target, port, got)
	}
	if _, err := os.Stat(filepath.Join(target, "80.sock")); err != nil {
		t.Errorf("the linked directory's socket is gone: %v", err)
	}
}
