package sshagent

import (
	"bytes"
	"errors"
	"net"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

func probeKey(b byte) []byte { return bytes.Repeat([]byte{b}, ProbeKeyLen) }

// TestProbe: the relay holding the key proves itself; one with another key, or none
// (bwrap's and krun's), does not, and the agent never sees a probe.
func TestProbe(t *testing.T) {
	key := probeKey(1)
	for name, tc := range map[string]struct {
		relayKey []byte
		want     error
	}{
		"the session's key": {key, nil},
		"another key":       {probeKey(2), ErrNotRelay},
		"no key":            {nil, ErrNotRelay},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			agentLn, err := listenUnix(filepath.Join(dir, "agent.sock"))
			if err != nil {
				t.Fatal(err)
			}
			defer agentLn.Close()
			fa := &fakeAgent{}
			go fa.serve(agentLn, framed([]byte{agentSuccess}))
			sock := filepath.Join(dir, "relay.sock")
			stop, err := Serve(sock, filepath.Join(dir, "agent.sock"), tc.relayKey, listenUnix)
			if err != nil {
				t.Fatal(err)
			}
			defer stop()
			if err := Probe(sock, key, time.Second); !errors.Is(err, tc.want) {
				t.Fatalf("Probe: %v, want %v", err, tc.want)
			}
			if got := fa.requests(); len(got) != 0 {
				t.Fatalf("the agent saw %d requests, want none", len(got))
			}
		})
	}
}

// TestProbeRefusedHalf: the relay gives its answer only to its own key's first
// half: a sandbox that asks with anything else learns nothing.
func TestProbeRefusedHalf(t *testing.T) {
	_, sock, stop := startRelayKey(t, probeKey(1))
	defer stop()
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got := roundTrip(t, c, probeRequest(probeKey(3))); !bytes.Equal(got, failure) {
		t.Fatalf("a probe with another key was answered %x, want failure", got)
	}
	if got := roundTrip(t, c, probeRequest(probeKey(1))); !bytes.Equal(got, probeResponse(probeKey(1))) {
		t.Fatalf("the probe was answered %x", got)
	}
}

func startRelayKey(t *testing.T, key []byte) (*fakeAgent, string, func()) {
	dir := t.TempDir()
	agentLn, err := listenUnix(filepath.Join(dir, "agent.sock"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { agentLn.Close() })
	fa := &fakeAgent{}
	go fa.serve(agentLn, framed([]byte{agentSuccess}))
	sock := filepath.Join(dir, "relay.sock")
	stop, err := Serve(sock, filepath.Join(dir, "agent.sock"), key, listenUnix)
	if err != nil {
		t.Fatal(err)
	}
	return fa, sock, stop
}

// TestProbeForged: a socket that answers success to anything is not taken for the
// relay; a missing one fails at once, a mute one at the bound.
func TestProbeForged(t *testing.T) {
	key := probeKey(1)
	dir := t.TempDir()
	sock := filepath.Join(dir, "forged.sock")
	ln, err := listenUnix(sock)
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
			go func() {
				defer c.Close()
				if _, err := readFrame(c); err != nil {
					return
				}
				_, _ = c.Write(framed(append([]byte{agentSuccess}, make([]byte, ProbeKeyLen/2)...)))
			}()
		}
	}()
	if err := Probe(sock, key, time.Second); !errors.Is(err, ErrNotRelay) {
		t.Fatalf("Probe of a forged socket: %v, want ErrNotRelay", err)
	}
	if err := Probe(filepath.Join(dir, "none.sock"), key, time.Second); !errors.Is(err, syscall.ENOENT) {
		t.Fatalf("Probe of no socket: %v, want ENOENT", err)
	}
	mute := filepath.Join(dir, "mute.sock")
	ml, err := listenUnix(mute)
	if err != nil {
		t.Fatal(err)
	}
	defer ml.Close()
	held := make(chan net.Conn, 1)
	go func() {
		c, err := ml.Accept()
		if err == nil {
			held <- c
		}
	}()
	start := time.Now()
	if err := Probe(mute, key, 100*time.Millisecond); err == nil {
		t.Fatal("Probe of a mute socket succeeded")
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("Probe took %v past its 100ms bound", d)
	}
	(<-held).Close()
}
