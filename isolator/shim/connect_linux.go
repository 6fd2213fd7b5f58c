package shim

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"
)

// connectPrefix starts the shim as a CONNECT client: `--connect=PROXY HOST PORT` opens
// a tunnel through the egress proxy and relays it to stdin and stdout. ssh uses it as
// its ProxyCommand in the proxy egress modes.
const connectPrefix = "--connect="

// connectMain tunnels to host:port through the HTTP proxy at proxyAddr.
func connectMain(proxyAddr string, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) != 2 {
		fmt.Fprintln(stderr, "devsandbox-connect: want HOST PORT")
		return 2
	}
	target := net.JoinHostPort(args[0], args[1])
	c, err := net.DialTimeout("tcp", proxyAddr, 10*time.Second)
	if err != nil {
		fmt.Fprintf(stderr, "devsandbox-connect: the egress proxy at %s: %v\n", proxyAddr, err)
		return 1
	}
	defer c.Close()
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		fmt.Fprintf(stderr, "devsandbox-connect: %s: %v\n", target, err)
		return 1
	}
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		fmt.Fprintf(stderr, "devsandbox-connect: the egress proxy refused %s: %s\n%s\n", target, resp.Status, strings.TrimSpace(string(body)))
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

// runConnect dispatches the --connect mode from Main.
func runConnect(arg string, rest []string, stderr io.Writer) int {
	return connectMain(strings.TrimPrefix(arg, connectPrefix), rest, os.Stdin, os.Stdout, stderr)
}
