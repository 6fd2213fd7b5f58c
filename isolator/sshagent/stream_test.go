package sshagent

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"path/filepath"
	"testing"
	"time"
)

// hostileStream is the sandbox's side of a stream as a hostile sandbox drives it:
// raw records to ServeStream, whose records it reads back. It returns ServeStream's
// error on done.
type hostileStream struct {
	w    *io.PipeWriter // to ServeStream
	r    *io.PipeReader // from it
	done chan error
}

func startStream(t *testing.T, upstream string) *hostileStream {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	h := &hostileStream{w: inW, r: outR, done: make(chan error, 1)}
	go func() {
		err := ServeStream(inR, outW, upstream)
		outW.Close()
		h.done <- err
	}()
	t.Cleanup(func() { inW.Close(); outR.Close() })
	return h
}

func (h *hostileStream) send(t *testing.T, raw []byte) {
	t.Helper()
	if _, err := h.w.Write(raw); err != nil {
		t.Fatalf("writing to the stream: %v", err)
	}
}

func record(id uint32, msg []byte) []byte {
	b := binary.BigEndian.AppendUint32(nil, id)
	if msg == nil {
		return binary.BigEndian.AppendUint32(b, 0)
	}
	return append(b, framed(msg)...)
}

func (h *hostileStream) read(t *testing.T) (uint32, []byte) {
	t.Helper()
	id, msg, err := readRecord(h.r)
	if err != nil {
		t.Fatalf("reading the stream: %v", err)
	}
	return id, msg
}

func (h *hostileStream) ended(t *testing.T) error {
	t.Helper()
	select {
	case err := <-h.done:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("ServeStream did not return")
		return nil
	}
}

func fakeUpstream(t *testing.T, reply []byte) (*fakeAgent, string) {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "agent.sock")
	ln, err := listenUnix(sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	fa := &fakeAgent{}
	go fa.serve(ln, reply)
	return fa, sock
}

// A stream passes only what the filter allows: listing reaches the agent, removing
// all identities, locking and adding are answered failure here.
func TestStreamFilters(t *testing.T) {
	reply := framed([]byte{12, 0, 0, 0, 0})
	fa, sock := fakeUpstream(t, reply)
	h := startStream(t, sock)
	h.send(t, []byte(StreamHello))
	for _, msg := range [][]byte{{19}, {22, 0, 0, 0, 1, 'x'}, {17}, {18}, {requestIdentities}} {
		h.send(t, record(3, msg))
		id, got := h.read(t)
		want := failure
		if msg[0] == requestIdentities {
			want = reply
		}
		if id != 3 || string(got) != string(want) {
			t.Errorf("request type %d: answered %d %v, want 3 %v", msg[0], id, got, want)
		}
	}
	h.send(t, record(3, nil))
	h.w.Close()
	if err := h.ended(t); err != nil {
		t.Errorf("ServeStream: %v", err)
	}
	if got := fa.requests(); len(got) != 1 || got[0][headerLen] != requestIdentities {
		t.Errorf("the agent received %v, want the listing only", got)
	}
}

// A record longer than the protocol allows, or a stream that does not say hello,
// ends the whole stream with ErrFrame; nothing reaches the agent.
func TestStreamMalformedEnds(t *testing.T) {
	fa, sock := fakeUpstream(t, framed([]byte{12, 0, 0, 0, 0}))
	for name, raw := range map[string][]byte{
		"huge":     append([]byte(StreamHello), 0, 0, 0, 1, 0x7f, 0xff, 0xff, 0xff, 11),
		"over max": append([]byte(StreamHello), binary.BigEndian.AppendUint32([]byte{0, 0, 0, 1}, MaxMessage+1)...),
		"no hello": append([]byte("dsbagent0\n"), record(1, []byte{requestIdentities})...),
	} {
		t.Run(name, func(t *testing.T) {
			h := startStream(t, sock)
			go func() { _, _ = io.Copy(io.Discard, h.r) }()
			go func() { _, _ = h.w.Write(raw) }()
			if err := h.ended(t); !errors.Is(err, ErrFrame) {
				t.Errorf("ServeStream: %v, want ErrFrame", err)
			}
		})
	}
	if n := len(fa.requests()); n != 0 {
		t.Errorf("the agent received %d requests", n)
	}
}

// At most MaxConns connections are served at once: the others are ended at once; a
// connection that queues more than streamQueue requests unanswered is ended.
func TestStreamBounds(t *testing.T) {
	// An agent that never answers: every served connection stays busy.
	sock := filepath.Join(t.TempDir(), "agent.sock")
	ln, err := listenUnix(sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	held := make(chan net.Conn, 2*MaxConns)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			held <- c
		}
	}()
	defer func() {
		for len(held) > 0 {
			(<-held).Close()
		}
	}()
	h := startStream(t, sock)
	h.send(t, []byte(StreamHello))
	const n = MaxConns + 36
	ended := map[uint32]bool{}
	got := make(chan uint32, n+streamQueue+2)
	go func() {
		for {
			id, msg, err := readRecord(h.r)
			if err != nil {
				close(got)
				return
			}
			if msg == nil {
				got <- id
			}
		}
	}()
	for id := uint32(1); id <= n; id++ {
		h.send(t, record(id, []byte{requestIdentities}))
	}
	for range n - MaxConns {
		ended[<-got] = true
	}
	for id := uint32(1); id <= n; id++ {
		if want := id > MaxConns; ended[id] != want {
			t.Errorf("connection %d ended: %v, want %v", id, ended[id], want)
		}
	}
	// Connection 1 waits for the agent: its queue fills, then it is ended.
	for range streamQueue + 1 {
		h.send(t, record(1, []byte{requestIdentities}))
	}
	if id := <-got; id != 1 {
		t.Errorf("ended connection %d, want 1 (its queue overflowed)", id)
	}
	h.w.Close()
	if err := h.ended(t); err != nil {
		t.Errorf("ServeStream: %v", err)
	}
}

// Carry and ServeStream together: a client of the sandbox's socket lists through the
// filter and is refused the rest; the socket is served until the host's side ends.
func TestCarryThroughStream(t *testing.T) {
	reply := framed([]byte{12, 0, 0, 0, 0})
	fa, upstream := fakeUpstream(t, reply)
	sock := filepath.Join(t.TempDir(), "sandbox.sock")
	ln, err := ListenCarried(sock)
	if err != nil {
		t.Fatal(err)
	}
	toHost, fromSandbox := io.Pipe()
	toSandbox, fromHost := io.Pipe()
	carried := make(chan error, 1)
	go func() { carried <- Carry(ln, toSandbox, fromSandbox) }()
	served := make(chan error, 1)
	go func() { served <- ServeStream(toHost, fromHost, upstream) }()
	for i := range 3 {
		c, err := net.Dial("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		if got := roundTrip(t, c, framed([]byte{requestIdentities})); string(got) != string(reply) {
			t.Errorf("connection %d: listing answered %v", i, got)
		}
		if got := roundTrip(t, c, framed([]byte{19})); string(got) != string(failure) {
			t.Errorf("connection %d: remove-all answered %v", i, got)
		}
		c.Close()
	}
	fromHost.Close() // the host's side ends: the sandbox's stops serving
	if err := <-carried; err != nil {
		t.Errorf("Carry: %v", err)
	}
	fromSandbox.Close()
	if err := <-served; err != nil {
		t.Errorf("ServeStream: %v", err)
	}
	if _, err := net.Dial("unix", sock); err == nil {
		t.Error("the sandbox's socket still serves after the stream ended")
	}
	if n := len(fa.requests()); n != 3 {
		t.Errorf("the agent received %d requests, want the 3 listings", n)
	}
}
