package sshagent

import (
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// fakeAgent records every request it receives and answers each with reply.
type fakeAgent struct {
	mu   sync.Mutex
	got  [][]byte
	conn int
}

func (f *fakeAgent) serve(ln net.Listener, reply []byte) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		f.mu.Lock()
		f.conn++
		f.mu.Unlock()
		go func() {
			defer c.Close()
			for {
				req, err := readFrame(c)
				if err != nil {
					return
				}
				f.mu.Lock()
				f.got = append(f.got, req)
				f.mu.Unlock()
				if _, err := c.Write(reply); err != nil {
					return
				}
			}
		}()
	}
}

func (f *fakeAgent) requests() [][]byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([][]byte(nil), f.got...)
}

func listenUnix(path string) (*net.UnixListener, error) {
	return net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
}

func framed(msg []byte) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(msg))), msg...)
}

// startRelay starts a fake agent and a relay to it; it returns the relay's socket.
func startRelay(t *testing.T, reply []byte) (*fakeAgent, string, func()) {
	dir := t.TempDir()
	agentLn, err := listenUnix(filepath.Join(dir, "agent.sock"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { agentLn.Close() })
	fa := &fakeAgent{}
	go fa.serve(agentLn, reply)
	sock := filepath.Join(dir, "relay.sock")
	stop, err := Serve(sock, filepath.Join(dir, "agent.sock"), nil, listenUnix)
	if err != nil {
		t.Fatal(err)
	}
	return fa, sock, stop
}

func roundTrip(t *testing.T, c net.Conn, req []byte) []byte {
	t.Helper()
	if _, err := c.Write(req); err != nil {
		t.Fatal(err)
	}
	resp, err := readFrame(c)
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	return resp
}

func TestRelayFilters(t *testing.T) {
	// An identities answer of some size passes back byte for byte.
	reply := framed(append([]byte{12, 0, 0, 0, 0}, bytes.Repeat([]byte{7}, 100000)...))
	fa, sock, stop := startRelay(t, reply)
	defer stop()
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	list := framed([]byte{requestIdentities})
	removeAll := framed([]byte{19})
	lock := framed(append([]byte{22}, sshString("pw")...))
	add := framed(append([]byte{17}, sshString("ssh-ed25519")...))
	bind := framed(ext("session-bind@openssh.com", 9, 9))
	sign := framed(append([]byte{signRequest}, sshString("key")...))
	for _, step := range []struct {
		req  []byte
		want []byte
	}{
		{removeAll, failure}, {list, reply}, {lock, failure}, {add, failure},
		{bind, reply}, {sign, reply}, {framed(ext("restrict-destination-v00@openssh.com")), failure},
	} {
		if got := roundTrip(t, c, step.req); !bytes.Equal(got, step.want) {
			t.Fatalf("answer to %v: %d bytes starting %v, want %d starting %v", step.req[:5], len(got), got[:5], len(step.want), step.want[:5])
		}
	}
	if got, want := fa.requests(), [][]byte{list, bind, sign}; !equalFrames(got, want) {
		t.Errorf("the agent received %d requests %v, want exactly list, session-bind, sign", len(got), got)
	}
}

func equalFrames(a, b [][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}

func TestRelayBadFrameCloses(t *testing.T) {
	for name, req := range map[string][]byte{
		"over the limit": binary.BigEndian.AppendUint32(nil, MaxMessage+1),
		"zero length":    {0, 0, 0, 0},
	} {
		t.Run(name, func(t *testing.T) {
			fa, sock, stop := startRelay(t, framed([]byte{6}))
			defer stop()
			c, err := net.Dial("unix", sock)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if _, err := c.Write(req); err != nil {
				t.Fatal(err)
			}
			// A bound, not a wait: a relay that reads on for the rest of the frame
			// would hold the test until go test's timeout.
			if err := c.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
				t.Fatal(err)
			}
			if n, err := c.Read(make([]byte, 8)); err != io.EOF {
				t.Errorf("after a bad frame: read %d bytes, err %v; want the connection closed", n, err)
			}
			if got := fa.requests(); len(got) != 0 {
				t.Errorf("the agent received %v", got)
			}
		})
	}
}

func TestRelayOnlyRefusedNeverDials(t *testing.T) {
	fa, sock, stop := startRelay(t, framed([]byte{6}))
	defer stop()
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	if got := roundTrip(t, c, framed([]byte{19})); !bytes.Equal(got, failure) {
		t.Errorf("remove all: %v", got)
	}
	c.Close()
	stop() // waits for the connection's goroutine: nothing is in flight after
	fa.mu.Lock()
	defer fa.mu.Unlock()
	if fa.conn != 0 {
		t.Errorf("the agent was dialled %d times for refused requests only", fa.conn)
	}
}

func TestRelayStopRemovesSocketAndCloses(t *testing.T) {
	_, sock, stop := startRelay(t, framed([]byte{6}))
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	roundTrip(t, c, framed([]byte{requestIdentities})) // an agent connection open too
	stop()
	if _, err := os.Lstat(sock); !os.IsNotExist(err) {
		t.Errorf("the relay's socket after stop: %v", err)
	}
	if n, err := c.Read(make([]byte, 8)); err != io.EOF {
		t.Errorf("a connection after stop: read %d bytes, err %v; want it closed", n, err)
	}
}

func TestRelayAgentGone(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "relay.sock")
	stop, err := Serve(sock, filepath.Join(dir, "none.sock"), nil, listenUnix)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got := roundTrip(t, c, framed([]byte{requestIdentities})); !bytes.Equal(got, failure) {
		t.Errorf("with no agent: %v, want failure", got)
	}
}

// TestRelayBoundsConnections: a sandbox that holds MaxConns connections open gets the
// next one closed at once (a descriptor of devsandbox's each), and those it holds
// keep working.
func TestRelayBoundsConnections(t *testing.T) {
	reply := framed([]byte{12, 0, 0, 0, 0})
	_, sock, stop := startRelay(t, reply)
	defer stop()
	list := framed([]byte{requestIdentities})
	var held []net.Conn
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	for range MaxConns {
		c, err := net.Dial("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
		roundTrip(t, c, list) // answered: the relay serves it
	}
	extra, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer extra.Close()
	_, _ = extra.Write(list)
	if _, err := readFrame(extra); err == nil {
		t.Fatalf("connection %d was answered: want it closed", MaxConns+1)
	}
	if got := roundTrip(t, held[0], list); !bytes.Equal(got, reply) {
		t.Errorf("a held connection's answer is %v, want %v", got, reply)
	}
}
