package sandboxinit

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/devsandbox/devsandbox/internal/dirent"
	"github.com/devsandbox/devsandbox/internal/rawfile"
)

// liveSession is a registered session of a kept container: its init's pid and pidfd
// (-1 without pidfds) and the name of its own proxy socket in the keeper's endpoint
// directory ("" without a proxy, or a name that is none), set before named is closed.
type liveSession struct {
	pid, pidfd int
	sock       string
	named      chan struct{}
}

// liveMu guards live. Sweeps hold sweepMu too; a proxy connection's routing holds
// only liveMu, briefly, so it never waits for a sweep.
var liveMu sync.Mutex

// live holds the registered sessions not yet ended, by a key of their own.
var live = map[*int]*liveSession{}

// nameLimit bounds how long a proxy connection waits for a session's init's name
// (sent as it registered: the keeper reads it once the session may start).
const nameLimit = 10 * time.Second

// running reports whether the session's init still runs: one whose init has exited
// counts as ended though its goroutine has not yet seen its connection end (a later
// run may register first).
func (s *liveSession) running() bool {
	if s.pidfd < 0 {
		return true
	}
	fds := []unix.PollFd{{Fd: int32(s.pidfd), Events: unix.POLLIN}}
	n, err := unix.Poll(fds, 0)
	return n == 0 && err == nil
}

// anyLive reports whether a registered session still runs.
func anyLive() bool {
	liveMu.Lock()
	defer liveMu.Unlock()
	for _, s := range live {
		if s.running() {
			return true
		}
	}
	return false
}

// errNoSession is routeProxy's answer when no live session has a proxy.
var errNoSession = errors.New("no session of this kept container is live")

// routeProxy names the proxy socket a connection to the kept container's proxy
// address goes to: the proxy of the session the connecting process belongs to.
// Sessions attached at the same time share the egress policy (it is part of the
// container's spec) but not their credentials' values nor their audit logs, so a
// connection never goes to another session's proxy. With one live session's proxy
// that is the one (nothing to look up); with more, the connection's client socket is
// found in /proc/net/tcp and the processes holding it in /proc, each traced up to its
// session's init (the exec'd process it descends from). A connection whose session
// cannot be told, or that more than one session's processes hold, goes nowhere.
func routeProxy(c net.Conn) (string, error) {
	var running []*liveSession
	liveMu.Lock()
	for _, s := range live {
		if s.running() {
			running = append(running, s)
		}
	}
	liveMu.Unlock()
	limit := time.After(nameLimit)
	socks := map[int]string{}
	for _, s := range running {
		select {
		case <-s.named:
		case <-limit:
			return "", fmt.Errorf("session %d has not named its proxy", s.pid)
		}
		liveMu.Lock()
		if s.sock != "" {
			socks[s.pid] = s.sock
		}
		liveMu.Unlock()
	}
	names := map[string]bool{}
	var only string
	for _, n := range socks {
		names[n], only = true, n
	}
	switch len(names) {
	case 0:
		return "", errNoSession
	case 1:
		return only, nil
	}
	pids, err := connHolders(c)
	if err != nil {
		return "", err
	}
	var sock string
	for _, pid := range pids {
		init := sessionInit(pid, parentPid)
		n, ok := socks[init]
		switch {
		case !ok:
			return "", fmt.Errorf("process %d, which holds the connection, belongs to no live session with a proxy", pid)
		case sock != "" && n != sock:
			return "", fmt.Errorf("processes of two sessions hold the connection")
		}
		sock = n
	}
	if sock == "" {
		return "", fmt.Errorf("no process of the container holds the connection")
	}
	return sock, nil
}

// connHolders returns the pids of the processes holding the client end of c, a
// connection accepted on a loopback TCP listener of this network namespace.
func connHolders(c net.Conn) ([]int, error) {
	client, err1 := netip.ParseAddrPort(c.RemoteAddr().String())
	server, err2 := netip.ParseAddrPort(c.LocalAddr().String())
	if err := errors.Join(err1, err2); err != nil {
		return nil, err
	}
	table, err := rawfile.ReadFile("/proc/net/tcp")
	if err != nil {
		return nil, err
	}
	inode, ok := tcpInode(table, client, server)
	if !ok {
		return nil, fmt.Errorf("the client socket %s is not in /proc/net/tcp", client)
	}
	return socketHolders("socket:[" + strconv.FormatUint(inode, 10) + "]"), nil
}

// tcpInode finds the inode of the IPv4 socket bound to local and connected to remote
// in table, the text of /proc/net/tcp ("sl local rem st ... uid timeout inode", the
// addresses as the kernel's hex of the address in this machine's byte order and the
// port). Pure.
func tcpInode(table []byte, local, remote netip.AddrPort) (uint64, bool) {
	hex := func(a netip.AddrPort) string {
		ip := a.Addr().Unmap().As4()
		return fmt.Sprintf("%08X:%04X", binary.NativeEndian.Uint32(ip[:]), a.Port())
	}
	if !local.Addr().Unmap().Is4() || !remote.Addr().Unmap().Is4() {
		return 0, false
	}
	l, r := []byte(hex(local)), []byte(hex(remote))
	for _, line := range bytes.Split(table, []byte("\n")) {
		f := bytes.Fields(line)
		if len(f) < 10 || !bytes.Equal(f[1], l) || !bytes.Equal(f[2], r) {
			continue
		}
		if n, err := strconv.ParseUint(string(f[9]), 10, 64); err == nil && n != 0 {
			return n, true
		}
	}
	return 0, false
}

// socketHolders returns the pids whose file descriptors include link (the target
// /proc/PID/fd/N reads as for a socket, "socket:[INODE]").
func socketHolders(link string) []int {
	var out []int
	_ = dirent.ReadDir("/proc", 8192, func(name string, _ byte) bool {
		pid, err := strconv.Atoi(name)
		if err != nil || pid <= 0 {
			return true
		}
		dir := "/proc/" + name + "/fd"
		found := false
		_ = dirent.ReadDir(dir, 4096, func(fd string, _ byte) bool {
			if t, err := os.Readlink(dir + "/" + fd); err == nil && t == link {
				found = true
				return false
			}
			return true
		})
		if found {
			out = append(out, pid)
		}
		return true
	})
	return out
}

// sessionInit returns the exec'd process pid descends from (itself when exec'd: its
// parent pid is 0 in the container), -1 when none is found (parent reads -1 for a
// process gone, the keeper's own children end at pid 1). Pure but for parent.
func sessionInit(pid int, parent func(int) int) int {
	for i := 0; i < 1<<16 && pid > 1; i++ {
		pp := parent(pid)
		if pp == 0 {
			return pid
		}
		if pp < 0 {
			return -1
		}
		pid = pp
	}
	return -1
}

// validProxySocket reports whether name can be a session's proxy socket in the
// endpoint directory (companion.ProxySocket, sockdir.ProxySocket): one name, no path.
func validProxySocket(name string) bool {
	return name == "" || (strings.HasPrefix(name, "proxy-") && strings.HasSuffix(name, ".sock") && !strings.ContainsAny(name, "/\x00\n") && len(name) < 128)
}
