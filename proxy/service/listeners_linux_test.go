package service

import (
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// receive runs ReceiveListeners on a fresh channel and returns the host end, the
// listeners served and the errors reported, each on a channel.
func receive(t *testing.T) (*os.File, <-chan net.Listener, <-chan error) {
	t.Helper()
	host, proxyEnd, err := NewListenerChannel()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { host.Close() })
	served, bad := make(chan net.Listener, 4), make(chan error, 4)
	go ReceiveListeners(proxyEnd, func(ln net.Listener) { served <- ln }, func(err error) { bad <- err })
	return host, served, bad
}

// TestListenerChannelServesTCPListener: a listening TCP socket handed on the channel
// is served: a connection to it is accepted through the served listener.
func TestListenerChannelServesTCPListener(t *testing.T) {
	host, served, bad := receive(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f, err := ln.(*net.TCPListener).File()
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if err := SendListener(host, f); err != nil {
		t.Fatal(err)
	}
	f.Close()
	ln.Close() // the proxy's copy is the only one now
	select {
	case got := <-served:
		defer got.Close()
		go func() {
			if c, err := got.Accept(); err == nil {
				_, _ = c.Write([]byte("ok"))
				c.Close()
			}
		}()
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		b, _ := io.ReadAll(c)
		if string(b) != "ok" {
			t.Fatalf("read %q through the handed listener, want ok", b)
		}
	case err := <-bad:
		t.Fatalf("a listening TCP socket was refused: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("the handed listener was never served")
	}
}

// TestListenerChannelRefusesOthers: whatever arrives on the channel that is not a
// listening TCP socket (a connected socket, a Unix listener, a file) is not served,
// is reported, and is closed. SendListener refuses them first; this sends raw.
func TestListenerChannelRefusesOthers(t *testing.T) {
	dir := t.TempDir()
	uln, err := net.Listen("unix", filepath.Join(dir, "s"))
	if err != nil {
		t.Fatal(err)
	}
	defer uln.Close()
	ulnf, _ := uln.(*net.UnixListener).File()
	tln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer tln.Close()
	conn, err := net.Dial("tcp", tln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	connf, _ := conn.(*net.TCPConn).File()
	file, err := os.Create(filepath.Join(dir, "f"))
	if err != nil {
		t.Fatal(err)
	}
	for name, f := range map[string]*os.File{"unix listener": ulnf, "connected TCP socket": connf, "regular file": file} {
		t.Run(name, func(t *testing.T) {
			host, served, bad := receive(t)
			if err := SendListener(host, f); err == nil {
				t.Fatalf("SendListener sent a %s", name)
			}
			if err := unix.Sendmsg(int(host.Fd()), []byte{listenerMsg}, unix.UnixRights(int(f.Fd())), nil, 0); err != nil {
				t.Fatal(err)
			}
			select {
			case ln := <-served:
				ln.Close()
				t.Fatalf("a %s was served as a listener", name)
			case err := <-bad:
				if !strings.Contains(err.Error(), "not a listening TCP socket") {
					t.Fatalf("error %q does not say why", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("nothing reported")
			}
		})
	}
}
