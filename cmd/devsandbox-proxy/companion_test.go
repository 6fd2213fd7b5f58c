//go:build linux

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/devsandbox/devsandbox/proxy/audit"
	"github.com/devsandbox/devsandbox/proxy/companion"
	"github.com/devsandbox/devsandbox/proxy/service"
)

// TestCompanion: devsandbox-proxy as a companion serves the request's policy on the
// endpoint directory's socket, refuses its own loopback even when allowed (the
// published ports' relays listen there), and streams the audit records, which the
// host relays into its log; the end of stdin ends it.
func TestCompanion(t *testing.T) {
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "hi") }))
	defer origin.Close()
	dir := t.TempDir()
	s := service.Settings{Session: "0a1b2c", LogDir: "/must/not/be/used", Default: "allow", Allow: entries(t, "127.0.0.1")}
	settings, _ := json.Marshal(s)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan int, 1)
	go func() {
		done <- companion.Serve(context.Background(), inR, outW, io.Discard, serveCompanion)
		outW.Close()
	}()
	if err := companion.WriteRequest(inW, companion.Request{Session: "0a1b2c", Dir: dir, Proxy: settings}); err != nil {
		t.Fatal(err)
	}
	out := bufio.NewReader(outR)
	if err := companion.AwaitReady(out); err != nil {
		t.Fatal(err)
	}
	logDir := t.TempDir()
	w, err := audit.Open(logDir, "0a1b2c", audit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	relayed := make(chan error, 1)
	go func() { relayed <- w.Relay(out) }()

	c, err := net.Dial("unix", filepath.Join(dir, companion.ProxySocket("0a1b2c")))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if code := proxied(t, c, bufio.NewReader(c), origin.URL+"/"); code != 403 {
		t.Errorf("the companion's loopback, allowed by an entry: %d, want 403", code)
	}
	c.Close()
	inW.Close()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("exit %d", code)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("still running 5 s after its stdin ended")
	}
	if err := <-relayed; err != nil {
		t.Errorf("relay: %v", err)
	}
	w.Close()
	recs, err := audit.ReadLog(logDir, audit.LogFilter{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range recs {
		got = append(got, fmt.Sprintf("%s %s %s %s", r.Session, r.Decision, r.Host, r.Rule))
	}
	if want := []string{"0a1b2c deny 127.0.0.1 " + audit.RuleHost}; !slices.Equal(got, want) {
		t.Errorf("audit log: %q, want %q", got, want)
	}
}
