package sandboxinit

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/devsandbox/devsandbox/internal/accept"
	"github.com/devsandbox/devsandbox/internal/fdpass"
	"github.com/devsandbox/devsandbox/internal/procs"
	"github.com/devsandbox/devsandbox/internal/rmtree"
	"github.com/devsandbox/devsandbox/isolator/sandboxinit/wire"
)

// keeperSocket is the keeper's abstract Unix socket: it lives in the kept container's
// own network namespace, on no file system a command could replace it in.
const keeperSocket = "@devsandbox-keeper"

// keeperEndSocket is where the host (through an exec of the init's role end) asks the
// keeper to end what is left of a session and confirm that none of its processes runs
// (see endRequest).
const keeperEndSocket = "@devsandbox-keeper-end"

// sessionKillLimit bounds how long a session's init spends killing what its command
// left; the keeper's sweep ends whatever remains.
const sessionKillLimit = 2 * time.Second

// keeper is pid 1 of a kept container: it reaps orphans, serves the project's stable
// proxy endpoint when the manifest names one, keeps the container free of processes
// that outlived their session (see sweep), and exits on SIGTERM.
//
// A process of the container is a session's when it descends from an exec'd process
// (parent pid 0 in the container: the engine started it, nothing inside could). Each
// session's init registers on keeperSocket before it reads the session's secrets; at
// each registration, and when a session's init goes away, the keeper kills every
// process that descends from no exec'd process: what an ended session left, whatever
// its state, also when its command killed the session's init first. A command can
// also stop its session's init (SIGSTOP reaches any process of its user but the
// container's pid 1), which then neither sees the host go nor ends its session: each
// init hands the keeper its end of the host's stream at registration, and once the
// host has closed it (devsandbox ended, or was killed) and the init has not ended
// its session within hostGoneGrace, the keeper kills the init (see watchHost).
//
// Not a pid namespace per session (the kernel would kill them all with the init):
// creating one needs CAP_SYS_ADMIN or an unshare that the engine's default seccomp
// profile refuses without it; and the container's cgroups are read-only inside.
func keeper(stderr io.Writer) int {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	if s, ok := os.LookupEnv(wire.ManifestEnv); ok {
		m, err := wire.DecodeManifest(s)
		if err != nil {
			say(stderr, "devsandbox-init", "%v", err)
			return ExitSetupFailed
		}
		secretDir = m.SecretDir
		if m.ForwardDir != "" {
			if err := serveDirForwarder(m.ForwardDir, routeProxy); err != nil {
				say(stderr, "devsandbox-init", "serving the proxy endpoint %s: %v", m.ForwardDir, err)
				return ExitSetupFailed
			}
		}
	}
	ln, err := net.Listen("unix", keeperSocket)
	if err != nil {
		say(stderr, "devsandbox-init", "listening for sessions: %v", err)
		return ExitSetupFailed
	}
	go serveSessions(ln)
	eln, err := net.Listen("unix", keeperEndSocket)
	if err != nil {
		say(stderr, "devsandbox-init", "listening for the host's requests to end a session: %v", err)
		return ExitSetupFailed
	}
	go accept.Loop(eln, func(c net.Conn) bool {
		go endRequest(c.(*net.UnixConn))
		return true
	})
	go procs.ReapOrphans()
	<-sigs
	return 0
}

// sweepMu serialises sweeps with registrations: a session is told to go on only
// once the sweep its registration started is done.
var sweepMu sync.Mutex

// secretDir is the kept container's secret files' directory (the manifest's
// SecretDir), a tmpfs of the container that outlives each session: the keeper
// empties it whenever no session is live, so a session's secret files do not outlive
// it for a later run that was given none.
var secretDir string

// serveSessions accepts the registrations of session inits.
func serveSessions(ln net.Listener) {
	accept.Loop(ln, func(c net.Conn) bool {
		go session(c.(*net.UnixConn))
		return true
	})
}

// session sweeps, acknowledges the registration of an exec'd session init, and sweeps
// again when its connection ends (the init exited, or was killed).
func session(c *net.UnixConn) {
	defer c.Close()
	// The connection ends as the init's files are closed, before the kernel hands its
	// children to the keeper: a sweep then would still see them below an exec'd
	// process. Its pidfd turns readable only once they have been handed over.
	// (Kernels before 5.3 have no pidfd: there the sweep's own retries are all.) The
	// pidfd names the process that connected, not one that took its pid since.
	pid, pidfd, ok := procs.EnginePeer(c)
	if !ok {
		return // not a process the engine started: not a session init
	}
	if pidfd >= 0 {
		defer unix.Close(pidfd)
	}
	key, s := new(int), &liveSession{pid: pid, pidfd: pidfd, named: make(chan struct{}), ended: make(chan struct{}), conn: c}
	sweepMu.Lock()
	sweep()
	if !anyLive() {
		clearLeftovers()
	}
	liveMu.Lock()
	live[key] = s
	liveMu.Unlock()
	_, err := c.Write([]byte{'k'})
	sweepMu.Unlock()
	// The init sent its proxy socket's name before it read the 'k': read only now,
	// so the keeper's sweep never waits for the init to be scheduled again.
	// routeProxy waits for it (named).
	sock, id, stream, nerr := readRegistration(c)
	ended, watched := make(chan struct{}), make(chan struct{})
	if stream >= 0 {
		go func() { watchHost(stream, pid, pidfd, ended); close(watched) }()
	} else {
		close(watched)
	}
	// Before pidfd is closed: watchHost may still signal through it.
	defer func() { close(ended); <-watched }()
	if nerr != nil {
		// It stays live (its secrets and IPC with it), with no proxy to route to.
		say(os.Stderr, "devsandbox-init", "a session's registration: %v", nerr)
	}
	liveMu.Lock()
	s.sock, s.id = sock, id
	liveMu.Unlock()
	close(s.named)
	if err == nil {
		_, _ = io.Copy(io.Discard, c)
		if pidfd >= 0 {
			waitExited(pidfd, 5*time.Second)
		}
	}
	sweepMu.Lock()
	liveMu.Lock()
	delete(live, key)
	liveMu.Unlock()
	s.clean = sweep()
	if !anyLive() {
		clearLeftovers()
	}
	sweepMu.Unlock()
	close(s.ended)
}

// endLimit bounds how long the keeper takes to end a session the host asks it to
// end (endRequest): its init killed, its connection's end seen, the sweep done.
const endLimit = 15 * time.Second

// endRequest serves one request of the host, on keeperEndSocket from a process the
// engine started (the init's role end), to end the session a line names (its
// wire.SessionIDArg) and confirm that none of its processes runs: it kills the
// session's init if it still runs (stopped by its command, say), waits for the sweep
// its end makes (which kills whatever the session left), and answers 'k' once that
// sweep left nothing, else 'n'. A session it does not know has ended (its sweep is
// done) or never started a command (the init starts it only once registered): a
// sweep of its own confirms that nothing an ended session left runs.
func endRequest(c *net.UnixConn) {
	defer c.Close()
	_, pidfd, ok := procs.EnginePeer(c)
	if !ok {
		return // not a process the engine started
	}
	if pidfd >= 0 {
		unix.Close(pidfd)
	}
	_ = c.SetDeadline(time.Now().Add(endLimit + 5*time.Second))
	line, err := bufio.NewReaderSize(c, 128).ReadString('\n')
	id := strings.TrimSuffix(line, "\n")
	if err != nil || !wire.ValidSessionID(id) {
		return
	}
	answer := byte('n')
	if endSessionNamed(id) {
		answer = 'k'
	}
	_, _ = c.Write([]byte{answer})
}

// endSessionNamed ends the session named id (endRequest) and reports whether nothing
// of it runs any more.
func endSessionNamed(id string) bool {
	if s := liveNamed(id); s != nil {
		if s.pidfd >= 0 {
			_ = unix.PidfdSendSignal(s.pidfd, unix.SIGKILL, nil, 0)
		} else {
			_ = syscall.Kill(s.pid, syscall.SIGKILL)
		}
		select {
		case <-s.ended:
			return s.clean
		case <-time.After(endLimit):
			return false
		}
	}
	sweepMu.Lock()
	defer sweepMu.Unlock()
	return sweep()
}

// liveNamed is the live session named id, nil when none is (waiting, for each live
// session, until its name was read: it is sent as the init registers).
func liveNamed(id string) *liveSession {
	liveMu.Lock()
	ss := make([]*liveSession, 0, len(live))
	for _, s := range live {
		ss = append(ss, s)
	}
	liveMu.Unlock()
	for _, s := range ss {
		select {
		case <-s.named:
		case <-time.After(nameLimit):
			continue
		}
		liveMu.Lock()
		named := s.id == id
		liveMu.Unlock()
		if named {
			return s
		}
	}
	return nil
}

// readProxySocket is readRegistration without the session's id.
func readProxySocket(c net.Conn) (string, int, error) {
	sock, _, stream, err := readRegistration(c)
	return sock, stream, err
}

// readRegistration reads the line a registering session's init sends first, in one
// write it sends nothing after: the name of its proxy socket ("" without a proxy)
// and, after a space, the session's id (wire.SessionIDArg; none from an init given
// none). The descriptor sent with the line (the init's end of the host's stream, see
// register) is returned too, -1 when none came; the caller closes it, whatever the
// error.
func readRegistration(c net.Conn) (sock, id string, stream int, err error) {
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	defer c.SetReadDeadline(time.Time{})
	var buf [256]byte
	n := 0
	stream = -1
	for n < len(buf) {
		var m int
		if uc, ok := c.(*net.UnixConn); ok && n == 0 && stream < 0 {
			// The descriptor comes with the line's first bytes. Go receives it
			// close-on-exec (MSG_CMSG_CLOEXEC).
			oob := make([]byte, unix.CmsgSpace(4*4))
			var oobn int
			m, oobn, _, _, err = uc.ReadMsgUnix(buf[n:], oob)
			stream = fdpass.First(oob[:oobn])
		} else {
			m, err = c.Read(buf[n:])
		}
		n += m
		if i := bytes.IndexByte(buf[:n], '\n'); i >= 0 {
			name, id, named := strings.Cut(string(buf[:i]), " ")
			if i == n-1 && validProxySocket(name) && (!named || wire.ValidSessionID(id)) {
				return name, id, stream, nil
			}
			return "", "", stream, fmt.Errorf("%q names no proxy socket and session", buf[:n])
		}
		if err != nil {
			return "", "", stream, err
		}
	}
	return "", "", stream, fmt.Errorf("the proxy socket's name is too long")
}

// hostGoneGrace is how long after the host closed a session's stream the keeper
// lets its init end the session itself (it kills what its command left, for up to
// sessionKillLimit) before it kills the init.
const hostGoneGrace = sessionKillLimit + time.Second

// watchHost closes stream (a session init's end of the host's stream) once ended is
// closed; if the host closes its end first (the stream hangs up) and the session has
// not ended hostGoneGrace later, it kills the session's init (by pidfd; by pid on a
// kernel without pidfds, before 5.3): a running init ends its session on its own when
// the host goes, and only a stopped one would not. Its connection then ends, and the
// keeper's sweep kills what the session left.
func watchHost(stream, pid, pidfd int, ended <-chan struct{}) {
	defer unix.Close(stream)
	hup := make(chan struct{})
	go func() {
		// Events 0: only POLLHUP and POLLERR wake it (the init reads the stream's
		// data; a pipe hangs up once no writer is left).
		for {
			fds := []unix.PollFd{{Fd: int32(stream), Events: 0}}
			n, err := unix.Poll(fds, 1000)
			if n == 1 && fds[0].Revents&(unix.POLLHUP|unix.POLLERR) != 0 {
				close(hup)
				return
			}
			if n == 1 || (err != nil && !errors.Is(err, unix.EINTR)) {
				return // POLLNVAL, or poll cannot watch it: nothing to act on
			}
			select {
			case <-ended:
				return
			default:
			}
		}
	}()
	select {
	case <-ended:
		return
	case <-hup:
	}
	select {
	case <-ended:
	case <-time.After(hostGoneGrace):
		if pidfd >= 0 {
			_ = unix.PidfdSendSignal(pidfd, unix.SIGKILL, nil, 0)
		} else {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// clearLeftovers empties what a kept container keeps between sessions and a session
// could leave for a later one: the secret files and the container's IPC (see
// clearIPC). It runs only while no session is live, after the sweep.
func clearLeftovers() {
	emptyDir(secretDir)
	clearIPC()
}

// emptyDir removes everything in dir (following no link, see rmtree.Empty), once
// nothing of an ended session runs: the secret files sessions were given, the shared
// memory files and message queues they made, and whatever a command planted there,
// however deep (the walk holds one descriptor of the tree at a time: a tree deeper
// than the container's open-file limit goes too) or locked (a directory its owner
// may not list or write gets its owner's rwx back). A failure is only logged: the
// next session's init writes its secret files over anything at their names.
func emptyDir(dir string) {
	if dir == "" {
		return
	}
	if err := rmtree.Empty(dir); err != nil {
		say(os.Stderr, "devsandbox-init", "%v", err)
	}
}

// waitExited waits up to limit for the process behind pidfd to have exited.
func waitExited(pidfd int, limit time.Duration) {
	for end := time.Now().Add(limit); time.Now().Before(end); {
		fds := []unix.PollFd{{Fd: int32(pidfd), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, int(time.Until(end).Milliseconds())+1)
		if n == 1 || (err != nil && !errors.Is(err, unix.EINTR)) {
			return
		}
	}
}

// sweep kills every process that descends from no exec'd process (but the keeper),
// until none is left or a few seconds passed, and reports whether none is left.
// Killed orphans are reaped by the keeper's reaper.
func sweep() bool {
	return procs.KillStrays(os.Getpid(), 5*time.Second)
}

// keeperStartLimit bounds how long a session's init waits for the keeper to listen:
// the first session of a kept container is exec'd as soon as the engine started it,
// which can be before its pid 1 (a Go program) listens, on a busy machine.
const keeperStartLimit = 10 * time.Second

// dialKeeper dials with dial (given the time left) until it connects, fails other
// than with ECONNREFUSED (nothing listens on the name yet), or limit has passed: it
// tries again after 1 ms, doubling up to 20 ms.
func dialKeeper(dial func(limit time.Duration) (net.Conn, error), limit time.Duration) (net.Conn, error) {
	end := time.Now().Add(limit)
	for pause := time.Millisecond; ; pause = min(2*pause, 20*time.Millisecond) {
		c, err := dial(time.Until(end))
		if err == nil || !errors.Is(err, syscall.ECONNREFUSED) || time.Now().Add(pause).After(end) {
			return c, err
		}
		time.Sleep(pause)
	}
}

// registerSession registers this process (an exec'd session init) with the kept
// container's keeper, naming the session's own proxy socket (proxySocket, "" without
// a proxy: the keeper relays the session's proxy connections there) and handing it
// stream (see register), and waits until
// its sweep is done: nothing an ended session left runs once it returns. The
// connection stays open for the session's life; closing it (at exit) makes the
// keeper sweep again.
func registerSession(proxySocket, id string, stream int) (net.Conn, error) {
	return register(keeperSocket, proxySocket, id, stream)
}

// register is registerSession on the keeper's socket addr. stream (fd 0 of a session
// init: the host's frames), when not -1, goes to the keeper with the line, so that it
// can end the session once the host is gone even if the init was stopped (see
// keeper).
func register(addr, proxySocket, id string, stream int) (net.Conn, error) {
	c, err := dialKeeper(func(limit time.Duration) (net.Conn, error) {
		return net.DialTimeout("unix", addr, limit)
	}, keeperStartLimit)
	if err != nil {
		return nil, fmt.Errorf("the kept container's keeper does not answer (%v); remove the container with `devsandbox sandboxes rm` and run again", err)
	}
	// Only the keeper, the container's pid 1, may let a session start: a process
	// that bound the name itself would answer without sweeping.
	if pid, err := procs.PeerPid(c.(*net.UnixConn)); err != nil || pid != 1 {
		c.Close()
		return nil, fmt.Errorf("something other than the kept container's keeper answers on its socket (pid %d, %v); remove the container with `devsandbox sandboxes rm` and run again", pid, err)
	}
	var oob []byte
	if stream >= 0 {
		oob = unix.UnixRights(stream)
	}
	line := proxySocket
	if id != "" {
		line += " " + id
	}
	if _, _, err := c.(*net.UnixConn).WriteMsgUnix([]byte(line+"\n"), oob, nil); err != nil {
		c.Close()
		return nil, fmt.Errorf("registering with the kept container's keeper: %w", err)
	}
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	var b [1]byte
	if _, err := io.ReadFull(c, b[:]); err != nil || b[0] != 'k' {
		c.Close()
		return nil, fmt.Errorf("the kept container's keeper did not let the session start (%v)", err)
	}
	_ = c.SetReadDeadline(time.Time{})
	return c, nil
}

// reportRefusals reads, until the keeper's connection conn ends, the connections the
// keeper refused that may have been this session's (one wire.Refusal a line, see
// tell) and reports each on stderr with the session's nonce (wire.RefusedMarker),
// which the host writes to the session's audit log. Without a nonce (a host that
// expects no report) they are read and dropped.
func reportRefusals(conn net.Conn, stderr io.Writer, nonce string) {
	br := bufio.NewReaderSize(conn, wire.MaxRefusalBytes+1)
	for {
		line, err := br.ReadSlice('\n')
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			return
		}
		if nonce == "" || errors.Is(err, bufio.ErrBufferFull) {
			continue // a line too long, which the keeper never sends: its parts are dropped as they come
		}
		if rf, ok := wire.ParseRefusal(bytes.TrimSuffix(line, []byte("\n"))); ok {
			if m := wire.RefusedMarker(nonce, rf); m != "" {
				_, _ = io.WriteString(stderr, m)
			}
		}
	}
}

// endSession is the init's role end: it asks the kept container's keeper (on
// keeperEndSocket) to end the session named id and confirm that none of its processes
// runs (see endRequest), and returns 0 once it did, 1 otherwise.
func endSession(id string, stderr io.Writer) int {
	c, err := dialKeeper(func(limit time.Duration) (net.Conn, error) {
		return net.DialTimeout("unix", keeperEndSocket, limit)
	}, time.Second)
	if err != nil {
		say(stderr, "devsandbox-init", "the kept container's keeper takes no request to end a session (%v)", err)
		return 1
	}
	defer c.Close()
	if pid, err := procs.PeerPid(c.(*net.UnixConn)); err != nil || pid != 1 {
		say(stderr, "devsandbox-init", "something other than the kept container's keeper answers on its socket (pid %d, %v)", pid, err)
		return 1
	}
	_ = c.SetDeadline(time.Now().Add(endLimit + 5*time.Second))
	var b [1]byte
	if _, err := io.WriteString(c, id+"\n"); err != nil {
		say(stderr, "devsandbox-init", "asking the keeper to end session %s: %v", id, err)
		return 1
	}
	if _, err := io.ReadFull(c, b[:]); err != nil || b[0] != 'k' {
		say(stderr, "devsandbox-init", "the keeper could not confirm that no process of session %s runs (%q, %v)", id, b[:], err)
		return 1
	}
	return 0
}
