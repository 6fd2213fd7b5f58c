//go:build linux

package companion

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// companion is Serve running on pipes, with a fake proxy that answers "proxy" on
// every connection, counts them and writes one audit line per connection.
type companion struct {
	stdin    io.WriteCloser
	stdout   *bufio.Reader
	stderr   bytes.Buffer
	code     chan int
	accepted atomic.Int32
	settings chan json.RawMessage
}

func startCompanion(t *testing.T, req Request) *companion {
	t.Helper()
	return startCompanionFrom(t, req, netip.MustParseAddr("127.0.0.1"))
}

// startCompanionFrom starts a companion whose published ports take forwarder for the
// engine's port forwarder.
func startCompanionFrom(t *testing.T, req Request, forwarder netip.Addr) *companion {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	c := &companion{stdin: inW, stdout: bufio.NewReader(outR), code: make(chan int, 1), settings: make(chan json.RawMessage, 1)}
	proxy := func(ctx context.Context, settings json.RawMessage, getenv func(string) (string, bool), isLocal func(netip.Addr) bool, ln net.Listener, log io.Writer) int {
		c.settings <- settings
		go func() {
			for {
				conn, err := ln.Accept()
				if err != nil {
					return
				}
				c.accepted.Add(1)
				v, _ := getenv("DEVSANDBOX_CREDENTIAL_0")
				io.WriteString(conn, "proxy "+v+"\n")
				conn.Close()
				io.WriteString(log, `{"session":"`+req.Session+`","host":"h.test"}`+"\n")
			}
		}()
		<-ctx.Done()
		ln.Close()
		return 7
	}
	go func() {
		from := func() (func(netip.Addr) bool, error) { return func(a netip.Addr) bool { return a == forwarder }, nil }
		c.code <- serve(context.Background(), inR, outW, &c.stderr, proxy, from)
		outW.Close()
	}()
	t.Cleanup(func() { inW.Close() })
	if err := WriteRequest(inW, req); err != nil {
		t.Fatal(err)
	}
	if err := AwaitReady(c.stdout); err != nil {
		t.Fatalf("%v (stderr %q)", err, c.stderr.String())
	}
	return c
}

func readLine(t *testing.T, c net.Conn) string {
	t.Helper()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	line, _ := bufio.NewReader(c).ReadString('\n')
	return line
}

// TestServeProxy: once ready, the proxy socket is there (0600) and serves with the
// request's settings and secrets; the audit lines follow the ready line; the end of
// stdin ends the companion with the proxy's code.
func TestServeProxy(t *testing.T) {
	dir := t.TempDir()
	c := startCompanion(t, Request{Session: "0a1b2c", Dir: dir, Proxy: json.RawMessage(`{"default":"deny"}`),
		Secrets: map[string]string{"DEVSANDBOX_CREDENTIAL_0": "tok"}})
	if s := <-c.settings; string(s) != `{"default":"deny"}` {
		t.Errorf("settings %s", s)
	}
	sock := filepath.Join(dir, ProxySocket("0a1b2c"))
	if fi, err := os.Stat(sock); err != nil || fi.Mode() != os.ModeSocket|0o600 {
		t.Errorf("proxy socket: %v, %v", fi, err)
	}
	conn, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	if got := readLine(t, conn); got != "proxy tok\n" {
		t.Errorf("the proxy answered %q", got)
	}
	if line, _ := c.stdout.ReadString('\n'); line != `{"session":"0a1b2c","host":"h.test"}`+"\n" {
		t.Errorf("audit line %q", line)
	}
	c.stdin.Close()
	select {
	case code := <-c.code:
		if code != 7 {
			t.Errorf("exit code %d, want the proxy's 7", code)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the companion did not end with its stdin")
	}
}

// freePort is a TCP port nothing listens on just now.
func freePort(t *testing.T) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// sandboxPort serves name in the publish directory as the sandbox's init does,
// answering "sandbox" on every connection.
func sandboxPort(t *testing.T, path string) {
	t.Helper()
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			io.WriteString(c, "sandbox\n")
			c.Close()
		}
	}()
}

// TestPublishRelay: a connection to a published port reaches the sandbox's socket;
// without a proxy in the request, the companion serves the ports only and ends with
// its stdin (0).
func TestPublishRelay(t *testing.T) {
	dir := t.TempDir()
	port := freePort(t)
	c := startCompanion(t, Request{Session: "0a1b2c", Dir: dir, Publish: []Port{{Listen: port, Sandbox: 8000}}})
	pub := filepath.Join(dir, PublishDir("0a1b2c"))
	if fi, err := os.Stat(pub); err != nil || fi.Mode() != os.ModeDir|0o700 {
		t.Fatalf("publish directory: %v, %v", fi, err)
	}
	sandboxPort(t, filepath.Join(pub, PublishSocket(8000)))
	conn, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		t.Fatal(err)
	}
	if got := readLine(t, conn); got != "sandbox\n" {
		t.Errorf("published port answered %q", got)
	}
	c.stdin.Close()
	if code := <-c.code; code != 0 {
		t.Errorf("exit code %d", code)
	}
	if _, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port)); err == nil {
		t.Error("the published port still listens after the companion ended")
	}
}

// TestPublishOnlyFromForwarder (attack): a published port serves the engine's port
// forwarder only; another peer (a container beside the companion on the engine's
// bridge, connecting to its address) is hung up on before the sandbox is dialed.
func TestPublishOnlyFromForwarder(t *testing.T) {
	dir := t.TempDir()
	port := freePort(t)
	startCompanionFrom(t, Request{Session: "0a1b2c", Dir: dir, Publish: []Port{{Listen: port, Sandbox: 8000}}}, netip.MustParseAddr("127.0.0.2"))
	sandboxPort(t, filepath.Join(dir, PublishDir("0a1b2c"), PublishSocket(8000)))
	conn, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		t.Fatal(err)
	}
	if got := readLine(t, conn); got != "" {
		t.Errorf("a peer other than the forwarder got %q from the published port", got)
	}
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}}
	conn, err = d.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		t.Fatal(err)
	}
	if got := readLine(t, conn); got != "sandbox\n" {
		t.Errorf("the forwarder got %q from the published port", got)
	}
}

// TestPublishNoFollow (attack): the sandbox can write the publish directory. A socket
// replaced by a symlink to the proxy's socket, or the whole directory swapped for a
// link to the endpoint directory, must not connect a visitor of the published port
// to the proxy.
func TestPublishNoFollow(t *testing.T) {
	for _, tc := range []struct {
		name  string
		plant func(t *testing.T, dir, pub, sock string)
	}{
		{"socket is a link", func(t *testing.T, dir, pub, sock string) {
			if err := os.Symlink(filepath.Join(dir, ProxySocket("0a1b2c")), filepath.Join(pub, sock)); err != nil {
				t.Fatal(err)
			}
		}},
		{"directory swapped for a link", func(t *testing.T, dir, pub, sock string) {
			if err := os.Rename(pub, pub+".old"); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(filepath.Join(dir, "decoy"), pub); err != nil {
				t.Fatal(err)
			}
			if err := os.Mkdir(filepath.Join(dir, "decoy"), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(filepath.Join(dir, ProxySocket("0a1b2c")), filepath.Join(dir, "decoy", sock)); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			port := freePort(t)
			c := startCompanion(t, Request{Session: "0a1b2c", Dir: dir, Proxy: json.RawMessage(`{}`), Publish: []Port{{Listen: port, Sandbox: port}}})
			tc.plant(t, dir, filepath.Join(dir, PublishDir("0a1b2c")), PublishSocket(port))
			conn, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port))
			if err != nil {
				t.Fatal(err)
			}
			if got := readLine(t, conn); got != "" {
				t.Errorf("a visitor of the published port got %q through the planted link", got)
			}
			if n := c.accepted.Load(); n != 0 {
				t.Errorf("the proxy accepted %d connections through the published port", n)
			}
		})
	}
}

func TestReadRequestRefuses(t *testing.T) {
	for _, line := range []string{
		`{"session":"../x","dir":"/ep"}`,
		`{"session":"","dir":"/ep"}`,
		`{"session":"ab","dir":"ep"}`,
		`{"session":"ab","dir":"/ep","publish":[{"listen":0,"sandbox":80}]}`,
		`{"session":"ab","dir":"/ep","publish":[{"listen":80,"sandbox":65536}]}`,
		`not json`,
		`{"session":"ab","dir":"/ep","proxy":"` + strings.Repeat("x", MaxRequestBytes) + `"}`,
	} {
		if _, err := ReadRequest(bufio.NewReader(strings.NewReader(line + "\n"))); !errors.Is(err, ErrCompanion) {
			t.Errorf("%.60q: %v, want ErrCompanion", line, err)
		}
	}
	if _, err := ReadRequest(bufio.NewReader(strings.NewReader(`{"session":"ab","dir":"/ep"}`))); !errors.Is(err, ErrCompanion) {
		t.Errorf("a request without its newline: %v", err)
	}
	if err := WriteRequest(io.Discard, Request{Session: "a/b", Dir: "/ep"}); !errors.Is(err, ErrCompanion) {
		t.Errorf("WriteRequest with a bad session: %v", err)
	}
}

func TestAwaitReady(t *testing.T) {
	for in, ok := range map[string]bool{ReadyLine + "\n{}\n": true, "": false, "hello\n": false, ReadyLine: false} {
		if err := AwaitReady(bufio.NewReader(strings.NewReader(in))); (err == nil) != ok {
			t.Errorf("%q: %v", in, err)
		}
	}
}

func TestDefaultGateway(t *testing.T) {
	routes := "Iface\tDestination\tGateway \tFlags\nveth0\t0011AC0A\t00000000\t0001\neth0\t00000000\t010011AC\t0003\n"
	if gw, ok := defaultGateway(routes); !ok || gw != netip.MustParseAddr("172.17.0.1") {
		t.Errorf("gateway %v, %v", gw, ok)
	}
	if _, ok := defaultGateway("Iface\tDestination\tGateway\n"); ok {
		t.Error("a gateway without a default route")
	}
}
