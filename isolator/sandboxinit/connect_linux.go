package sandboxinit

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/devsandbox/devsandbox/internal/termsafe"
)

// connectPrefix starts the init as a CONNECT client: `--connect=PROXY HOST PORT` opens
// a tunnel through the egress proxy and relays it to stdin and stdout. ssh uses it as
// its ProxyCommand in the proxy egress modes.
const connectPrefix = "--connect="

// connectMain tunnels to host:port through the HTTP proxy at proxyAddr.
func connectMain(proxyAddr string, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) != 2 {
		say(stderr, "devsandbox-connect", "want HOST PORT")
		return 2
	}
	target := net.JoinHostPort(args[0], args[1])
	c, err := net.DialTimeout("tcp", proxyAddr, 10*time.Second)
	if err != nil {
		say(stderr, "devsandbox-connect", "the egress proxy at %s: %v", proxyAddr, err)
		return 1
	}
	defer c.Close()
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
	br := bufio.NewReader(c)
	status, length, err := readResponseHead(br)
	if err != nil {
		say(stderr, "devsandbox-connect", "%s: %v", target, err)
		return 1
	}
	if !strings.HasPrefix(status, "200") {
		if length < 0 || length > 4096 {
			length = 4096
		}
		body := make([]byte, length)
		n, _ := io.ReadFull(br, body)
		say(stderr, "devsandbox-connect", "the egress proxy refused %s: %s", target, status)
		for l := range strings.Lines(strings.TrimSpace(string(body[:n]))) {
			fmt.Fprintln(stderr, termsafe.Line(strings.TrimSuffix(l, "\n"))) // the proxy's explanation, which names the target
		}
		return 1
	}
	done := make(chan struct{})
	go func() {
		_, _ = io.Copy(c, stdin)
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
		close(done)
	}()
	_, _ = io.Copy(stdout, br) // bytes the proxy sent after its response come first
	return 0
}

// readResponseHead reads an HTTP/1.x response's status line and headers (net/http
// would triple the init's size for this) and returns the status ("200 OK") and the
// Content-Length (-1 when absent).
func readResponseHead(br *bufio.Reader) (status string, length int, err error) {
	line, err := br.ReadString('\n')
	if err != nil {
		return "", 0, err
	}
	proto, status, ok := strings.Cut(strings.TrimRight(line, "\r\n"), " ")
	if !ok || !strings.HasPrefix(proto, "HTTP/1.") {
		return "", 0, fmt.Errorf("not an HTTP response: %q", line)
	}
	length = -1
	for {
		h, err := br.ReadString('\n')
		if err != nil {
			return "", 0, err
		}
		h = strings.TrimRight(h, "\r\n")
		if h == "" {
			return status, length, nil
		}
		if k, v, ok := strings.Cut(h, ":"); ok && strings.EqualFold(strings.TrimSpace(k), "Content-Length") {
			if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil {
				length = n
			}
		}
	}
}

// runConnect dispatches the --connect mode from Main.
func runConnect(arg string, rest []string, stderr io.Writer) int {
	return connectMain(strings.TrimPrefix(arg, connectPrefix), rest, os.Stdin, os.Stdout, stderr)
}
