package publish

import (
	"net"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/devsandbox/devsandbox/internal/relay"
)

// The host's relay reaches the sandbox's socket in the publish directory, and never
// a host socket a sandboxed process linked there.
func TestDialPublishedRefusesLinks(t *testing.T) {
	dir := t.TempDir()
	pub := filepath.Join(dir, "publish")
	if err := os.Mkdir(pub, 0o700); err != nil {
		t.Fatal(err)
	}
	serve := func(path string) {
		ln, err := net.Listen("unix", path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				_, _ = c.Write([]byte(filepath.Base(path)))
				c.Close()
			}
		}()
	}
	serve(filepath.Join(pub, "80.sock"))
	serve(filepath.Join(dir, "host.sock")) // a host socket outside the directory
	if err := os.Symlink(filepath.Join(dir, "host.sock"), filepath.Join(pub, "81.sock")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(pub, "82.sock"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	fd, err := unix.Open(pub, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)

	c, err := relay.DialNoFollow(fd, "80.sock")
	if err != nil {
		t.Fatalf("the sandbox's socket: %v", err)
	}
	buf := make([]byte, 16)
	n, _ := c.Read(buf)
	c.Close()
	if string(buf[:n]) != "80.sock" {
		t.Fatalf("reached %q, want 80.sock", buf[:n])
	}
	for _, name := range []string{"81.sock", "82.sock", "missing.sock"} {
		if c, err := relay.DialNoFollow(fd, name); err == nil {
			c.Close()
			t.Errorf("%s: connected, want refused", name)
		}
	}
	// The directory renamed and replaced by a link: the descriptor still holds the
	// original.
	if err := os.Rename(pub, pub+".moved"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(dir, pub); err != nil {
		t.Fatal(err)
	}
	if c, err := relay.DialNoFollow(fd, "80.sock"); err != nil {
		t.Errorf("after the rename: %v", err)
	} else {
		c.Close()
	}
}
