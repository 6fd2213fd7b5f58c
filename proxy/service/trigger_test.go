package service

import (
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// tcpListener is a listening socket on the loopback and its descriptor.
func tcpListener(t *testing.T) (*net.TCPListener, *os.File) {
	t.Helper()
	ln, err := net.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	f, err := ln.File()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return ln, f
}

// TestStartOnDemand: the proxy process starts on the first connection pending on its
// socket or on a listener its Trigger watches, and not at all in a run without one;
// stop cleans up either way.
func TestStartOnDemand(t *testing.T) {
	for _, connect := range []string{"", "socket", "watched"} {
		t.Run("connect="+connect, func(t *testing.T) {
			dir := shortTemp(t)
			sock, marker := filepath.Join(dir, "p.sock"), filepath.Join(dir, "stopped")
			trig, err := NewTrigger()
			if err != nil {
				t.Fatal(err)
			}
			ln, lnFile := tcpListener(t)
			stop, err := spawn(os.Args[0], SettingsOf(fakePlan(sock, marker)),
				[]string{fakeProxyEnv + "=serve"}, sock, Options{Bound: 5 * time.Second, Stderr: os.Stderr, Trigger: trig})
			if err != nil {
				t.Fatal(err)
			}
			if err := trig.Watch(lnFile); err != nil {
				t.Fatal(err)
			}
			switch connect {
			case "socket":
				if line := answer(t, sock); line != "ok\n" {
					t.Errorf("the proxy answered %q", line)
				}
			case "watched":
				c, err := net.Dial("tcp", ln.Addr().String())
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				// The fake proxy does not serve the watched listener: a pending
				// connection there only starts it, and it then answers on its socket.
				if line := answer(t, sock); line != "ok\n" {
					t.Errorf("the proxy answered %q", line)
				}
			}
			stop()
			_, err = os.Stat(marker)
			if started := err == nil; started != (connect != "") {
				t.Errorf("connection %q: the proxy ran: %v, want %v", connect, started, connect != "")
			}
			if _, err := os.Lstat(sock); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("socket left after stop: %v", err)
			}
		})
	}
}

// TestTriggerWatchNeverAccepts: watching leaves every connection in the backlog for the
// proxy, and a listener watched after the Trigger closed is not held open by it.
func TestTriggerWatchNeverAccepts(t *testing.T) {
	trig, err := NewTrigger()
	if err != nil {
		t.Fatal(err)
	}
	ln, f := tcpListener(t)
	if err := trig.Watch(f); err != nil {
		t.Fatal(err)
	}
	fired := make(chan bool, 1)
	go func() { fired <- trig.wait() }()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if !<-fired {
		t.Fatal("a pending connection did not fire the trigger")
	}
	_ = ln.SetDeadline(time.Now().Add(5 * time.Second))
	a, err := ln.Accept()
	if err != nil {
		t.Fatalf("the connection that fired the trigger is not in the backlog: %v", err)
	}
	a.Close()

	// After the trigger is over, Watch keeps no duplicate: closing the caller's
	// copies closes the socket, and a connection is refused.
	ln2, f2 := tcpListener(t)
	addr := ln2.Addr().String()
	if err := trig.Watch(f2); err != nil {
		t.Fatal(err)
	}
	trig.Close()
	f2.Close()
	ln2.Close()
	if c, err := net.Dial("tcp", addr); err == nil {
		c.Close()
		t.Error("a listener watched after the trigger fired is still open")
	}
}

// TestTriggerClose: Close ends a wait in progress (false), and a Trigger closed before
// any wait does not wait.
func TestTriggerClose(t *testing.T) {
	trig, err := NewTrigger()
	if err != nil {
		t.Fatal(err)
	}
	_, f := tcpListener(t)
	if err := trig.Watch(f); err != nil {
		t.Fatal(err)
	}
	fired := make(chan bool, 1)
	go func() { fired <- trig.wait() }()
	trig.Close()
	if <-fired {
		t.Error("Close fired the trigger")
	}
	trig.Close() // again: nothing happens

	closed, err := NewTrigger()
	if err != nil {
		t.Fatal(err)
	}
	closed.Close()
	if closed.wait() {
		t.Error("a closed Trigger fired")
	}
}

// TestTriggerConnectionBeforeWatch: a connection already pending when the listener is
// watched fires the trigger (the poller is edge-triggered; the watch looks first),
// and one pending on a listener whose descriptor was blocking does too.
func TestTriggerConnectionBeforeWatch(t *testing.T) {
	for _, blocking := range []bool{false, true} {
		trig, err := NewTrigger()
		if err != nil {
			t.Fatal(err)
		}
		ln, f := tcpListener(t)
		if blocking {
			f.Fd() // switches the shared description to blocking
		}
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if err := trig.Watch(f); err != nil {
			t.Fatal(err)
		}
		fired := make(chan bool, 1)
		go func() { fired <- trig.wait() }()
		select {
		case ok := <-fired:
			if !ok {
				t.Errorf("blocking %v: the trigger returned without firing", blocking)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("blocking %v: a connection pending before the watch did not fire the trigger", blocking)
		}
		trig.Close()
	}
}

// TestStartWithoutSocket: with NoSocket the proxy gets the listener channel and no
// socket of its own: no file is bound, a run without connections starts no proxy, and
// a connection to a handed listener starts it and is served through it.
func TestStartWithoutSocket(t *testing.T) {
	for _, connect := range []bool{false, true} {
		dir := shortTemp(t)
		marker := filepath.Join(dir, "stopped")
		trig, err := NewTrigger()
		if err != nil {
			t.Fatal(err)
		}
		host, proxyEnd, err := NewListenerChannel()
		if err != nil {
			t.Fatal(err)
		}
		defer host.Close()
		set := SettingsOf(fakePlan("", marker))
		set.Listeners, set.NoSocket = true, true
		stop, err := spawn(os.Args[0], set, []string{fakeProxyEnv + "=serve"}, "",
			Options{Bound: 5 * time.Second, Stderr: os.Stderr, Trigger: trig, Listeners: proxyEnd})
		if err != nil {
			t.Fatal(err)
		}
		ln, f := tcpListener(t)
		if err := trig.Watch(f); err != nil {
			t.Fatal(err)
		}
		if err := SendListener(host, f); err != nil {
			t.Fatal(err)
		}
		f.Close()
		ln.Close() // the proxy's copy (in the channel until it runs) is the only one now
		if connect {
			c, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			_ = c.SetDeadline(time.Now().Add(10 * time.Second))
			b := make([]byte, 3)
			if _, err := io.ReadFull(c, b); err != nil || string(b) != "ok\n" {
				t.Errorf("through the handed listener: %q, %v", b, err)
			}
			c.Close()
		}
		stop()
		_, err = os.Stat(marker)
		if started := err == nil; started != connect {
			t.Errorf("connect %v: the proxy ran: %v", connect, started)
		}
		if names, _ := os.ReadDir(dir); len(names) > map[bool]int{false: 0, true: 1}[connect] {
			t.Errorf("connect %v: files made: %v", connect, names)
		}
	}
}
