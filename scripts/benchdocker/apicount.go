package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"regexp"
	"strings"
	"sync"
)

// apiCounter is a Unix socket in front of the engine's that records the Engine API
// requests made through it (method and path, the query left out), to count what a
// launch asks of the engine. After an attach or an exec start hijacks a connection,
// the bytes that follow are the session's; lines in them that look like requests
// would be counted too (a `true` sends none).
type apiCounter struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	reqs   []string
}

var requestLine = regexp.MustCompile(`^(GET|HEAD|POST|PUT|DELETE) (/[^ ?]*)\S* HTTP/1\.[01]\r?$`)

// startCounter listens on sock (mode 0666, for the benchmark's user) and forwards to
// the engine socket target.
func startCounter(sock, target string) (*apiCounter, error) {
	_ = os.Remove(sock) // a previous run's
	ln, err := net.Listen("unix", sock)
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(sock, 0o666); err != nil {
		ln.Close()
		return nil, err
	}
	c := &apiCounter{ln: ln, target: target}
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go c.relay(conn)
		}
	}()
	return c, nil
}

func (c *apiCounter) relay(conn net.Conn) {
	defer conn.Close()
	up, err := net.Dial("unix", c.target)
	if err != nil {
		return
	}
	defer up.Close()
	pr, pw := io.Pipe()
	go func() {
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		for sc.Scan() {
			if m := requestLine.FindStringSubmatch(sc.Text()); m != nil {
				c.mu.Lock()
				c.reqs = append(c.reqs, m[1]+" "+m[2])
				c.mu.Unlock()
			}
		}
		_, _ = io.Copy(io.Discard, pr)
	}()
	go func() {
		_, _ = io.Copy(io.MultiWriter(up, pw), conn)
		pw.Close()
		if u, ok := up.(*net.UnixConn); ok {
			_ = u.CloseWrite()
		}
	}()
	_, _ = io.Copy(conn, up)
}

// take returns the requests recorded since the last take.
func (c *apiCounter) take() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.reqs
	c.reqs = nil
	return r
}

func (c *apiCounter) Close() error { return c.ln.Close() }

// engineSocket is the engine's Unix socket: DOCKER_HOST's, else the default one.
func engineSocket() (string, error) {
	h := os.Getenv("DOCKER_HOST")
	if h == "" {
		return "/var/run/docker.sock", nil
	}
	if s, ok := strings.CutPrefix(h, "unix://"); ok {
		return s, nil
	}
	return "", fmt.Errorf("counting requests needs the engine's Unix socket, DOCKER_HOST is %s", h)
}

// printRequests prints what one run of each side asked of the engine.
func printRequests(name string, reqs []string) {
	fmt.Printf("  %-46s %d Engine API requests\n", name, len(reqs))
	for _, r := range reqs {
		fmt.Printf("      %s\n", elideIDs.ReplaceAllString(r, "{id}"))
	}
}

var elideIDs = regexp.MustCompile(`\b(sha256:)?[0-9a-f]{64}\b|\b[0-9a-f]{12}\b`)
