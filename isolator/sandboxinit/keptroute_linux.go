package sandboxinit

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/devsandbox/devsandbox/internal/dirent"
	"github.com/devsandbox/devsandbox/internal/procs"
	"github.com/devsandbox/devsandbox/internal/rawfile"
)

// liveSession is a registered session of a kept container: its init's pid and pidfd
// (-1 without pidfds), the name of its own proxy socket in the keeper's endpoint
// directory ("" without a proxy, or a name that is none) and its id, set before
// named is closed.
type liveSession struct {
	pid, pidfd int
	sock       string
	id         string // the session's id (wire.SessionIDArg), "" when none came
	named      chan struct{}
	// ended is closed once the session's end was swept; clean says whether that
	// sweep left nothing.
	ended chan struct{}
	clean bool
	// conn is the init's registration (nil in tests), on which the keeper tells it
	// the connections it refused that may have been its session's (tell).
	conn net.Conn
	wmu  sync.Mutex // one refusal at a time on conn
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

// unplaced is routeProxy's error for a connection whose session it cannot tell:
// socks are the proxy sockets of the sessions it may be (nil: any live one's).
type unplaced struct {
	why   string
	socks []string
}

func (u *unplaced) Error() string { return u.why }

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
	inits := map[int]bool{}
	for _, s := range running {
		inits[s.pid] = true
	}
	holders, unreadable, err := connHolders(c)
	if err != nil {
		return "", err
	}
	return pickSession(holders, unreadable, inits, socks, func(pid int) int { return sessionInit(pid, procs.ParentPid) })
}

// pickSession names the proxy socket of the session whose processes hold a
// connection: holders are the processes found holding it, unreadable those whose
// file descriptors the keeper may not read (non-dumpable: prctl(PR_SET_DUMPABLE, 0),
// as ssh does; their /proc/PID/stat, and so their session, stays readable), inits the
// live sessions' inits, socks their proxies' sockets by init, initOf a process's
// session init (-1 for none). With holders found, every one must be of one session.
// With none (the client is non-dumpable, or has handed its socket on), the holder is
// among the unreadable processes: the connection is that session's when they all
// belong to one session (the inits, which hold no client socket, aside), refused
// when they belong to more. A refusal is an *unplaced naming the sessions the
// connection may be (any, when a process of no session with a proxy may hold it).
// Pure but for initOf.
func pickSession(holders, unreadable []int, inits map[int]bool, socks map[int]string, initOf func(int) int) (string, error) {
	seen := map[string]bool{}
	refuse := func(format string, a ...any) (string, error) {
		u := &unplaced{why: fmt.Sprintf(format, a...)}
		for n := range seen {
			u.socks = append(u.socks, n)
		}
		slices.Sort(u.socks)
		return "", u
	}
	var sock string
	for _, pid := range holders {
		n, ok := socks[initOf(pid)]
		if ok {
			seen[n] = true
		}
		switch {
		case !ok:
			clear(seen) // it may be any session's
			return refuse("process %d, which holds the connection, belongs to no live session with a proxy", pid)
		case sock != "" && n != sock:
			return refuse("processes of two sessions hold the connection")
		}
		sock = n
	}
	if sock != "" {
		return sock, nil
	}
	for _, pid := range unreadable {
		if pid == 1 || inits[pid] {
			continue
		}
		n, ok := socks[initOf(pid)]
		if ok {
			seen[n] = true
		}
		switch {
		case !ok:
			clear(seen)
			return refuse("no process the keeper can read holds the connection, and process %d, which it cannot read (non-dumpable), belongs to no live session with a proxy", pid)
		case sock != "" && n != sock:
			for _, pid := range unreadable { // every session it may be
				if n, ok := socks[initOf(pid)]; ok && pid != 1 && !inits[pid] {
					seen[n] = true
				}
			}
			return refuse("no process the keeper can read holds the connection, and more than one session runs processes it cannot read (non-dumpable): it cannot tell whose the connection is")
		}
		sock = n
	}
	if sock == "" {
		return refuse("no process of the container holds the connection")
	}
	return sock, nil
}

// tell sends the refusal line (wire.EncodeRefusal's, with its newline) to the inits
// of the live sessions whose proxy sockets are socks (nil: every live session with a
// proxy), each of which reports it to its host for the session's audit log. A
// session whose init does not take it within a second goes without.
func tell(socks []string, line []byte) {
	var to []*liveSession
	liveMu.Lock()
	for _, s := range live {
		if s.conn != nil && s.sock != "" && s.running() && (socks == nil || slices.Contains(socks, s.sock)) {
			to = append(to, s)
		}
	}
	liveMu.Unlock()
	for _, s := range to {
		s.wmu.Lock()
		_ = s.conn.SetWriteDeadline(time.Now().Add(time.Second))
		_, _ = s.conn.Write(line)
		s.wmu.Unlock()
	}
}

// connHolders returns the pids of the processes holding the client end of c, a
// connection accepted on a loopback TCP listener of this network namespace, and of
// those whose file descriptors this process may not read.
func connHolders(c net.Conn) (holders, unreadable []int, err error) {
	client, err1 := netip.ParseAddrPort(c.RemoteAddr().String())
	server, err2 := netip.ParseAddrPort(c.LocalAddr().String())
	if err := errors.Join(err1, err2); err != nil {
		return nil, nil, err
	}
	table, err := rawfile.ReadFile("/proc/net/tcp")
	if err != nil {
		return nil, nil, err
	}
	inode, established, ok := tcpInode(table, client, server)
	if !ok {
		return nil, nil, fmt.Errorf("the client socket %s is not in /proc/net/tcp", client)
	}
	holders, unreadable = socketHolders("socket:[" + strconv.FormatUint(inode, 10) + "]")
	if !established {
		// Its client sent all it will and may have closed it (a request sent, then
		// closed before the keeper looked, is held by no process): only a holder
		// found names its session, not the processes the keeper cannot read.
		unreadable = nil
	}
	return holders, unreadable, nil
}

// tcpInode finds the inode of the IPv4 socket bound to local and connected to remote
// in table, the text of /proc/net/tcp ("sl local rem st ... uid timeout inode", the
// addresses as the kernel's hex of the address in this machine's byte order and the
// port), and whether it is established (state 01: its client has not shut down its
// sending side). Pure.
func tcpInode(table []byte, local, remote netip.AddrPort) (inode uint64, established, ok bool) {
	hex := func(a netip.AddrPort) string {
		ip := a.Addr().Unmap().As4()
		return fmt.Sprintf("%08X:%04X", binary.NativeEndian.Uint32(ip[:]), a.Port())
	}
	if !local.Addr().Unmap().Is4() || !remote.Addr().Unmap().Is4() {
		return 0, false, false
	}
	l, r := []byte(hex(local)), []byte(hex(remote))
	for _, line := range bytes.Split(table, []byte("\n")) {
		f := bytes.Fields(line)
		if len(f) < 10 || !bytes.Equal(f[1], l) || !bytes.Equal(f[2], r) {
			continue
		}
		if n, err := strconv.ParseUint(string(f[9]), 10, 64); err == nil && n != 0 {
			return n, string(f[3]) == "01", true
		}
	}
	return 0, false, false
}

// socketHolders returns the pids whose file descriptors include link (the target
// /proc/PID/fd/N reads as for a socket, "socket:[INODE]"), and those whose
// file descriptors this process may not read (a non-dumpable process).
func socketHolders(link string) (holders, unreadable []int) {
	_ = dirent.ReadDir("/proc", 8192, func(name string, _ byte) bool {
		pid, err := strconv.Atoi(name)
		if err != nil || pid <= 0 {
			return true
		}
		dir := "/proc/" + name + "/fd"
		found, denied := false, false
		err = dirent.ReadDir(dir, 4096, func(fd string, _ byte) bool {
			t, err := os.Readlink(dir + "/" + fd)
			found = err == nil && t == link
			// Where the directory's owner is this process's user (the user
			// namespace's root on a rootless engine), a non-dumpable process's
			// directory lists, but its links refuse.
			denied = errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM)
			return !found && !denied
		})
		switch {
		case found:
			holders = append(holders, pid)
		case denied || errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM):
			unreadable = append(unreadable, pid)
		}
		return true
	})
	return holders, unreadable
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
