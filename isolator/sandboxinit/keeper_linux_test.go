package sandboxinit

import (
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The first session of a kept container can be exec'd before the keeper listens: its
// init dials again while nothing listens (ECONNREFUSED), and only then; it gives up
// once the limit has passed.
func TestDialKeeper(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "unix", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	server, client := net.Pipe()
	defer server.Close()
	calls := 0
	c, err := dialKeeper(func(time.Duration) (net.Conn, error) {
		if calls++; calls < 4 {
			return nil, refused
		}
		return client, nil
	}, time.Minute)
	if err != nil || c != client || calls != 4 {
		t.Fatalf("dialKeeper: %v, %v after %d calls; want the connection after 4", c, err, calls)
	}

	other := &net.OpError{Op: "dial", Net: "unix", Err: os.NewSyscallError("connect", syscall.EACCES)}
	calls = 0
	if _, err := dialKeeper(func(time.Duration) (net.Conn, error) { calls++; return nil, other }, time.Minute); err != other || calls != 1 {
		t.Fatalf("another error: %v after %d calls; want it at once", err, calls)
	}

	calls = 0
	if _, err := dialKeeper(func(time.Duration) (net.Conn, error) { calls++; return nil, refused }, 0); err != refused || calls != 1 {
		t.Fatalf("no time left: %v after %d calls; want the refusal at once", err, calls)
	}
}

// A session's init refuses a socket whose listener is not pid 1 (the keeper), here
// the test process listening on a name of its own: it would answer without sweeping.
func TestRegisterRefusesAnotherListener(t *testing.T) {
	if os.Getpid() == 1 {
		t.Skip("the test runs as pid 1")
	}
	ln, err := net.Listen("unix", "@devsandbox-keeper-test-"+strconv.Itoa(os.Getpid()))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		if c, err := ln.Accept(); err == nil {
			c.Write([]byte{'k'})
			c.Close()
		}
	}()
	c, err := register(ln.Addr().String(), "", "", -1)
	if err == nil {
		c.Close()
		t.Fatal("register accepted a listener that is not pid 1")
	}
	if want := "something other than the kept container's keeper answers on its socket (pid " + strconv.Itoa(os.Getpid()); !strings.Contains(err.Error(), want) {
		t.Fatalf("register: %v; want %q", err, want)
	}
}

// emptyDir empties the directory and follows no link planted in it.
func TestEmptyDir(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	if err := os.WriteFile(outside+"/keep", []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := writeSecretFiles(dir, map[string][]byte{"TOKEN": []byte("v")}); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, dir+"/link"); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir+"/d/e", 0o700); err != nil {
		t.Fatal(err)
	}
	emptyDir(dir)
	if ents, err := os.ReadDir(dir); err != nil || len(ents) != 0 {
		t.Fatalf("left %v (%v)", ents, err)
	}
	if _, err := os.Stat(outside + "/keep"); err != nil {
		t.Fatalf("a link's target was removed: %v", err)
	}
	emptyDir("") // no secret directory: nothing to do
}
