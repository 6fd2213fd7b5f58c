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
	"time"
)

// apiCounter is a Unix socket in front of the engine's that records the Engine API
// requests made through it (method and path, the query left out), to count what a
// launch asks of the engine. After an attach or an exec start hijacks a connection,
// the bytes that follow are the session's; lines in them that look like requests
// would be counted too (a `true` sends none). Each request is timed from the last take
// (the start of the run) to when it was sent and to the first byte of its answer.
type apiCounter struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	t0     time.Time
	reqs   []request
}

// request is one recorded request: what, when it was sent and when its answer began
// (from the start of the run; answered is 0 for one that got no answer).
type request struct {
	line           string
	sent, answered time.Duration
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
	c := &apiCounter{ln: ln, target: target, t0: time.Now()}
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
	// The requests of this connection not answered yet, oldest first (HTTP/1.1 answers
	// in order).
	var pending []int
	go func() {
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		for sc.Scan() {
			if m := requestLine.FindStringSubmatch(sc.Text()); m != nil {
				c.mu.Lock()
				pending = append(pending, len(c.reqs))
				c.reqs = append(c.reqs, request{line: m[1] + " " + m[2], sent: time.Since(c.t0)})
				c.mu.Unlock()
			}
		}
		_, _ = io.Copy(io.Discard, pr)
	}()
	answers := writerFunc(func(b []byte) (int, error) {
		c.mu.Lock()
		if len(pending) > 0 {
			if i := pending[0]; i < len(c.reqs) {
				c.reqs[i].answered = time.Since(c.t0)
			}
			pending = pending[1:]
		}
		c.mu.Unlock()
		return conn.Write(b)
	})
	go func() {
		_, _ = io.Copy(io.MultiWriter(up, pw), conn)
		pw.Close()
		if u, ok := up.(*net.UnixConn); ok {
			_ = u.CloseWrite()
		}
	}()
	_, _ = io.Copy(answers, up)
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }

// take returns the requests recorded since the last take; the next run's times start
// now.
func (c *apiCounter) take() []request {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.reqs
	c.reqs = nil
	c.t0 = time.Now()
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

// printRequests prints what one run of each side asked of the engine, and when: sent
// and answered, in ms from the run's start (the process's exec, roughly).
func printRequests(name string, reqs []request) {
	fmt.Printf("  %-46s %d Engine API requests (sent, answered: ms from the run's start)\n", name, len(reqs))
	for _, r := range reqs {
		fmt.Printf("      %7.1f %7.1f  %s\n", ms(r.sent), ms(r.answered), elideIDs.ReplaceAllString(r.line, "{id}"))
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

var elideIDs = regexp.MustCompile(`\b(sha256:)?[0-9a-f]{64}\b|\b[0-9a-f]{12}\b`)
