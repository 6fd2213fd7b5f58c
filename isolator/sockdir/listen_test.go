package sockdir

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"testing"
)

// A session's proxy socket is never taken for a dead session's: with another
// session sweeping the directory all the while, every socket Listen makes is there,
// accepting, when Listen returns. (Bound at its path directly, the socket refused
// connections between bind and listen, and the sweep removed it: that way failed
// within the first four of these here, with chmod's "no such file or directory".)
func TestListenNotSwept(t *testing.T) {
	dir := t.TempDir()
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
				Sweep(dir)
			}
		}
	}()
	defer func() { close(stop); <-done }()
	lost := 0
	for i := range 300 {
		p := ProxySocket(dir, fmt.Sprintf("%012d", i))
		ln, err := Listen(p)
		if err != nil {
			t.Fatalf("listen %d: %v", i, err)
		}
		c, err := net.Dial("unix", p)
		if err != nil {
			lost++
		} else {
			c.Close()
		}
		ln.Close()
		os.Remove(p)
	}
	if lost > 0 {
		t.Errorf("%d of 300 sockets were gone right after Listen", lost)
	}
}

// Listen makes the socket 0600, leaves nothing else in the directory, and never
// replaces what is at the path.
func TestListen(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "proxy-x.sock")
	ln, err := Listen(p)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	fi, err := os.Lstat(p)
	if err != nil || fi.Mode().Type() != fs.ModeSocket || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket %v, %v; want a socket of mode 0600", fi, err)
	}
	if names, _ := os.ReadDir(dir); len(names) != 1 {
		t.Errorf("the directory holds %v, want the socket alone", names)
	}
	if _, err := Listen(p); !errors.Is(err, fs.ErrExist) {
		t.Errorf("Listen over a socket: %v, want it refused", err)
	}
	if c, err := net.Dial("unix", p); err != nil {
		t.Errorf("the first socket after a second Listen: %v", err)
	} else {
		c.Close()
	}
}
