package sandboxinit

import (
	"encoding/binary"
	"errors"
	"net"
	"net/netip"
	"slices"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/devsandbox/devsandbox/isolator/sandboxinit/wire"
)

// tcpInode finds the client socket of a loopback connection in a real
// /proc/net/tcp of this process's network namespace.
func TestTCPInode(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Skipf("no loopback: %v", err)
	}
	defer ln.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	pids, _, err := connHolders(s)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(pids, []int{selfPid()}) {
		t.Fatalf("the client end is held by %v, want this process alone", pids)
	}

	table := []byte(`  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:0C38 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 1111 1 0000000000000000 100 0 0 10 0
   1: 0100007F:A1B2 0100007F:0C38 01 00000000:00000000 00:00000000 00000000  1000        0 2222 1 0000000000000000 20 4 30 10 -1
   2: 0100007F:0C38 0100007F:A1B2 01 00000000:00000000 00:00000000 00000000  1000        0 3333 1 0000000000000000 20 4 30 10 -1
   3: 0100007F:A1B4 0100007F:0C38 04 00000000:00000000 00:00000000 00000000  1000        0 4444 1 0000000000000000 20 4 30 10 -1
`)
	client, server := netip.MustParseAddrPort("127.0.0.1:41394"), netip.MustParseAddrPort("127.0.0.1:3128")
	if !littleEndian() {
		t.Skip("the table above is a little-endian machine's")
	}
	if n, est, ok := tcpInode(table, client, server); !ok || n != 2222 || !est {
		t.Fatalf("tcpInode: %d %v %v, want the client's 2222, established", n, est, ok)
	}
	if n, est, ok := tcpInode(table, netip.MustParseAddrPort("127.0.0.1:41396"), server); !ok || n != 4444 || est {
		t.Fatalf("tcpInode: %d %v %v, want 4444, not established (FIN_WAIT1)", n, est, ok)
	}
	if n, _, ok := tcpInode(table, netip.MustParseAddrPort("127.0.0.1:41395"), server); ok {
		t.Fatalf("tcpInode found %d for a port not in the table", n)
	}
	if _, _, ok := tcpInode(table, netip.MustParseAddrPort("[::1]:41394"), server); ok {
		t.Fatal("tcpInode took an IPv6 address")
	}
}

// sessionInit walks up to the exec'd process (parent pid 0 in the container).
func TestSessionInit(t *testing.T) {
	parents := map[int]int{1: 0, 10: 0, 11: 10, 12: 11, 20: 1, 30: 99}
	parent := func(pid int) int {
		if pp, ok := parents[pid]; ok {
			return pp
		}
		return -1
	}
	for _, c := range []struct{ pid, want int }{
		{12, 10}, {11, 10}, {10, 10},
		{20, -1}, // the keeper's: no session's
		{30, -1}, // its parent is gone
	} {
		if got := sessionInit(c.pid, parent); got != c.want {
			t.Errorf("sessionInit(%d) = %d, want %d", c.pid, got, c.want)
		}
	}
}

// pickSession routes by the holders found, else by the session of the processes the
// keeper cannot read; never to a session it cannot tell is the connection's.
func TestPickSession(t *testing.T) {
	// Sessions 10 (proxy a) and 20 (proxy b); 30 has no proxy; 40 is no session's.
	session := map[int]int{10: 10, 11: 10, 12: 10, 20: 20, 21: 20, 22: 20, 30: 30, 31: 30, 40: -1}
	initOf := func(pid int) int {
		if s, ok := session[pid]; ok {
			return s
		}
		return -1
	}
	inits := map[int]bool{10: true, 20: true, 30: true}
	socks := map[int]string{10: "proxy-a.sock", 20: "proxy-b.sock"}
	for _, c := range []struct {
		name            string
		holders, unread []int
		want            string
		maybe           []string // the sessions a refused connection may be (nil: any)
	}{
		{"a holder of A", []int{11}, []int{10, 20, 22}, "proxy-a.sock", nil},
		{"holders of A", []int{11, 12}, nil, "proxy-a.sock", nil},
		{"holders of A and B", []int{11, 21}, nil, "", []string{"proxy-a.sock", "proxy-b.sock"}},
		{"a holder of no proxy's session", []int{31}, nil, "", nil},
		{"a holder of no session", []int{40}, nil, "", nil},
		{"none found, A's unreadable", nil, []int{1, 10, 12, 20}, "proxy-a.sock", nil},
		{"none found, B's unreadable", nil, []int{1, 10, 20, 21, 22}, "proxy-b.sock", nil},
		{"none found, A's and B's unreadable", nil, []int{12, 22}, "", []string{"proxy-a.sock", "proxy-b.sock"}},
		{"none found, no proxy's session unreadable", nil, []int{12, 31}, "", nil},
		{"none found, no session's unreadable", nil, []int{40, 12}, "", nil},
		{"none found, only inits unreadable", nil, []int{1, 10, 20}, "", nil},
		{"none found", nil, nil, "", nil},
	} {
		got, err := pickSession(c.holders, c.unread, inits, socks, initOf)
		if got != c.want || (err == nil) != (c.want != "") {
			t.Errorf("%s: %q, %v; want %q", c.name, got, err, c.want)
		}
		var u *unplaced
		if err != nil && (!errors.As(err, &u) || !slices.Equal(u.socks, c.maybe)) {
			t.Errorf("%s: refused (%v) as %#v, want an unplaced error with %q", c.name, err, err, c.maybe)
		}
	}
}

// parseRequestLine names what a refused connection asked for, never its query.
func TestParseRequestLine(t *testing.T) {
	for line, want := range map[string]wire.Refusal{
		"CONNECT example.com:443 HTTP/1.1\r":          {Method: "CONNECT", Host: "example.com", Port: 443},
		"CONNECT [2001:db8::1]:8443 HTTP/1.1":         {Method: "CONNECT", Host: "2001:db8::1", Port: 8443},
		"GET http://example.com/a/b?token=x HTTP/1.1": {Method: "GET", Host: "example.com", Port: 80, Path: "/a/b"},
		"GET http://u:p@example.com:8088 HTTP/1.1":    {Method: "GET", Host: "example.com", Port: 8088},
		"POST https://example.com?x#y HTTP/1.1":       {Method: "POST", Host: "example.com", Port: 443},
		"GET /local?q HTTP/1.1":                       {Method: "GET", Path: "/local"},
		"garbage":                                     {},
		"":                                            {},
	} {
		if got := parseRequestLine(line); got != want {
			t.Errorf("parseRequestLine(%q) = %+v, want %+v", line, got, want)
		}
	}
}

func TestValidProxySocket(t *testing.T) {
	for name, want := range map[string]bool{
		"": true, "proxy-0123abcd.sock": true,
		"../proxy-x.sock": false, "proxy-x.sock/..": false, "other.sock": false, "proxy-x": false,
	} {
		if got := validProxySocket(name); got != want {
			t.Errorf("validProxySocket(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestSysvIDs(t *testing.T) {
	table := []byte(`       key      shmid perms                  size  cpid  lpid nattch   uid   gid  cuid  cgid      atime      dtime      ctime                   rss                  swap
 224074366          3  1666                  4096    40     0      0  1000  1000  1000  1000          0          0 1733400000                     0                     0
         0         65  1600                  4096    41     0      0  1000  1000  1000  1000          0          0 1733400000                     0                     0
`)
	if got := sysvIDs(table); !slices.Equal(got, []int{3, 65}) {
		t.Fatalf("sysvIDs = %v, want [3 65]", got)
	}
	if got := sysvIDs([]byte("       key      semid perms\n")); len(got) != 0 {
		t.Fatalf("sysvIDs of an empty table = %v", got)
	}
}

func selfPid() int { return unix.Getpid() }

func littleEndian() bool {
	var b [2]byte
	binary.NativeEndian.PutUint16(b[:], 1)
	return b[0] == 1
}

// readProxySocket reads the registering init's line, in one write or several, and
// refuses a name that is no proxy socket's.
func TestReadProxySocket(t *testing.T) {
	for _, c := range []struct {
		writes []string
		want   string
		ok     bool
	}{
		{[]string{"proxy-s1.sock\n"}, "proxy-s1.sock", true},
		{[]string{"proxy-", "s1.sock\n"}, "proxy-s1.sock", true},
		{[]string{"\n"}, "", true},
		{[]string{"../proxy-s1.sock\n"}, "", false},
		{[]string{"proxy-s1.sock\nmore"}, "", false},
		{[]string{"proxy-s1.sock"}, "", false}, // the connection ends first
	} {
		a, b := net.Pipe()
		go func() {
			for _, w := range c.writes {
				_, _ = b.Write([]byte(w))
			}
			b.Close()
		}()
		got, stream, err := readProxySocket(a)
		if stream != -1 {
			t.Errorf("%q: descriptor %d over a connection that passes none", c.writes, stream)
		}
		a.Close()
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("%q: %q, %v; want %q (ok %v)", c.writes, got, err, c.want, c.ok)
		}
	}
}
