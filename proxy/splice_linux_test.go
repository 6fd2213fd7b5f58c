package proxy

import (
	"bytes"
	"crypto/rand"
	"io"
	"net"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// socketPair is a connected pair of network's sockets (tcp on loopback, or unix).
func socketPair(t *testing.T, network string) (a, b net.Conn) {
	t.Helper()
	addr := "127.0.0.1:0"
	if network == "unix" {
		addr = filepath.Join(t.TempDir(), "s")
	}
	ln, err := net.Listen(network, addr)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	acc := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		acc <- c
	}()
	a, err = net.Dial(network, ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	b = <-acc
	if b == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { a.Close(); b.Close() })
	return a, b
}

// The tunnel's two legs (the client's Unix socket, the target's TCP socket) are
// spliced in the kernel both ways, not copied through user space: spliceRelay takes
// them, moves every byte, counts them and half-closes at end of file.
func TestSpliceRelayTakesSockets(t *testing.T) {
	for _, legs := range [][2]string{{"tcp", "unix"}, {"unix", "tcp"}} {
		t.Run(legs[0]+"->"+legs[1], func(t *testing.T) {
			srcPeer, src := socketPair(t, legs[0])
			dst, dstPeer := socketPair(t, legs[1])
			payload := make([]byte, 3<<20+17)
			rand.Read(payload)
			go func() {
				srcPeer.Write(payload)
				srcPeer.(interface{ CloseWrite() error }).CloseWrite()
			}()
			var last, n atomic.Int64
			handled := make(chan bool, 1)
			go func() { handled <- spliceRelay(dst, src, time.Minute, &last, &n) }()
			_ = dstPeer.SetReadDeadline(time.Now().Add(30 * time.Second))
			got, err := io.ReadAll(dstPeer) // ends when spliceRelay half-closes dst
			if err != nil {
				t.Fatal(err)
			}
			if !<-handled {
				t.Fatal("spliceRelay did not take a pair of plain sockets")
			}
			if !bytes.Equal(got, payload) || n.Load() != int64(len(payload)) {
				t.Errorf("moved %d bytes (equal: %v), counted %d; want %d", len(got), bytes.Equal(got, payload), n.Load(), len(payload))
			}
		})
	}
}

// A connection that is not a plain socket (here a bufferedConn holding early bytes) is
// left to the copying relay, untouched.
func TestSpliceRelayLeavesWrappedConns(t *testing.T) {
	_, src := socketPair(t, "unix")
	dst, _ := socketPair(t, "tcp")
	var last, n atomic.Int64
	if spliceRelay(dst, &bufferedConn{Conn: src, early: []byte("x")}, time.Minute, &last, &n) {
		t.Error("spliceRelay took a wrapped connection")
	}
}

// A tunnel whose client sent bytes with its CONNECT (held in a bufferedConn) sends
// them first, then splices both directions, and counts every byte of each once.
func TestPipeEarlyBytesThenSplice(t *testing.T) {
	clientPeer, client := socketPair(t, "tcp")
	target, targetPeer := socketPair(t, "tcp")
	early := []byte("early-hello")
	upRest := make([]byte, 1<<20+3)
	down := make([]byte, 2<<20+5)
	rand.Read(upRest)
	rand.Read(down)
	go func() {
		clientPeer.Write(upRest)
		clientPeer.(interface{ CloseWrite() error }).CloseWrite()
	}()
	go func() {
		targetPeer.Write(down)
		targetPeer.(interface{ CloseWrite() error }).CloseWrite()
	}()
	gotUp, gotDown := make(chan []byte, 1), make(chan []byte, 1)
	go func() { b, _ := io.ReadAll(targetPeer); gotUp <- b }()
	go func() { b, _ := io.ReadAll(clientPeer); gotDown <- b }()
	_ = targetPeer.SetReadDeadline(time.Now().Add(30 * time.Second))
	_ = clientPeer.SetReadDeadline(time.Now().Add(30 * time.Second))
	var up, dn atomic.Int64
	upSpliced, downSpliced := pipe(&bufferedConn{Conn: client, early: early}, target, time.Minute, &up, &dn)
	if !upSpliced || !downSpliced {
		t.Errorf("spliced up %v, down %v; want both", upSpliced, downSpliced)
	}
	if b := <-gotUp; !bytes.Equal(b, append(early, upRest...)) {
		t.Errorf("target got %d bytes, want the early bytes then %d", len(b), len(upRest))
	}
	if b := <-gotDown; !bytes.Equal(b, down) {
		t.Errorf("client got %d bytes, want %d", len(b), len(down))
	}
	if up.Load() != int64(len(early)+len(upRest)) || dn.Load() != int64(len(down)) {
		t.Errorf("counted up %d, down %d; want %d, %d", up.Load(), dn.Load(), len(early)+len(upRest), len(down))
	}
}
