//go:build linux

package companion

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/devsandbox/devsandbox/internal/accept"
	"github.com/devsandbox/devsandbox/internal/relay"
)

// Serve is the companion: it reads the Request from in, listens on the proxy socket
// and the published ports, writes ReadyLine to out, and serves until in ends (or ctx
// is done), then returns proxy's exit code (0 without a proxy; 2 when it could not
// start). Diagnostics go to stderr. A published port serves only the engine's port
// forwarder (see engineForwarder).
//
// Before it reads the request (the secrets), the process makes itself not dumpable:
// in a kept container's companion, a process another session left running there (as
// the same user: a compromised dependency of that session's proxy) could otherwise
// read this session's environment and memory through /proc, or trace it; the
// companion has no capability to override that.
func Serve(ctx context.Context, in io.Reader, out, stderr io.Writer, proxy Proxy) int {
	if !notDumpable(stderr) {
		return 2
	}
	return serve(ctx, in, out, stderr, proxy, engineForwarder)
}

// ServeHeld is Serve for a session's proxy exec'd into a kept container's companion,
// beside its holder (Hold), stdin being the host's stream: before it reads the
// request, it registers with the holder, which kills what ended sessions left in the
// companion first, and later what this session leaves, and this process itself
// should it outlive the host's stream (see Hold).
func ServeHeld(ctx context.Context, stdin *os.File, out, stderr io.Writer, proxy Proxy) int {
	if !notDumpable(stderr) {
		return 2
	}
	conn, err := register(holdSocket, stdin)
	if err != nil {
		fmt.Fprintf(stderr, "devsandbox-proxy companion: %v\n", err)
		return 2
	}
	defer conn.Close()
	return serve(ctx, stdin, out, stderr, proxy, engineForwarder)
}

// notDumpable makes the process not dumpable, and says why not on stderr if it
// cannot.
func notDumpable(stderr io.Writer) bool {
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		fmt.Fprintf(stderr, "devsandbox-proxy companion: making the process not dumpable (so that no other process of the companion reads its secrets): %v\n", err)
		return false
	}
	return true
}

// serve is Serve with the test of a published port's peer: forwarder reports
// whether a connection from addr is the engine's publishing.
func serve(ctx context.Context, in io.Reader, out, stderr io.Writer, proxy Proxy, forwarder func() (func(netip.Addr) bool, error)) int {
	fail := func(err error) int {
		fmt.Fprintf(stderr, "devsandbox-proxy companion: %v\n", err)
		return 2
	}
	br := bufio.NewReaderSize(in, 64<<10)
	req, err := ReadRequest(br)
	if err != nil {
		return fail(err)
	}
	if len(req.Roots) > 0 {
		if err := useRoots(req.Roots); err != nil {
			return fail(err)
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() { // the end of stdin ends the session
		_, _ = io.Copy(io.Discard, br)
		cancel()
	}()
	var ln net.Listener
	var isLocal func(netip.Addr) bool
	if req.Proxy != nil {
		if isLocal, err = refusing(req.Refuse); err != nil {
			return fail(err)
		}
		if ln, err = listenUnix(filepath.Join(req.Dir, ProxySocket(req.Session))); err != nil {
			return fail(err)
		}
	}
	relays, err := listenPublished(req, forwarder)
	if err != nil {
		if ln != nil {
			ln.Close()
		}
		return fail(err)
	}
	defer relays.close()
	w := &lockedWriter{w: out}
	if _, err := io.WriteString(w, ReadyLine+"\n"); err != nil {
		return fail(err)
	}
	if ln == nil {
		<-ctx.Done()
		return 0
	}
	getenv := func(k string) (string, bool) { v, ok := req.Secrets[k]; return v, ok }
	return proxy(ctx, req.Proxy, getenv, isLocal, ln, w)
}

// useRoots makes roots the certificates crypto/x509 checks servers against: it reads
// SSL_CERT_FILE (and SSL_CERT_DIR) when it first needs them. The roots live in a
// sealed memory file, named by its /proc/self/fd path: the image's /tmp may not be
// writable by the companion's user (an image's /tmp mode is copied onto the tmpfs
// there, 0755 in busybox's), and no directory is needed that anything else could
// write to.
func useRoots(roots []byte) error {
	// A raw descriptor, not an *os.File, whose finalizer would close it: it stays open
	// for the process's life, as SSL_CERT_FILE names it.
	fd, err := unix.MemfdCreate("devsandbox-roots.pem", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return fmt.Errorf("keeping the certificate roots in memory (memfd_create): %w", err)
	}
	for b := roots; len(b) > 0; {
		n, err := unix.Write(fd, b)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			unix.Close(fd)
			return fmt.Errorf("writing the certificate roots: %w", err)
		}
		b = b[n:]
	}
	const seals = unix.F_SEAL_SEAL | unix.F_SEAL_SHRINK | unix.F_SEAL_GROW | unix.F_SEAL_WRITE
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, seals); err != nil {
		unix.Close(fd)
		return fmt.Errorf("sealing the certificate roots: %w", err)
	}
	os.Unsetenv("SSL_CERT_DIR")
	return os.Setenv("SSL_CERT_FILE", fmt.Sprintf("/proc/self/fd/%d", fd))
}

// lockedWriter serialises the ready line and the audit records.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// listenUnix listens on path, reachable by the companion's user only (the sandbox runs
// as the same user).
func listenUnix(path string) (net.Listener, error) {
	old := unix.Umask(0o177)
	ln, err := net.Listen("unix", path)
	unix.Umask(old)
	if err != nil {
		return nil, fmt.Errorf("listening on the proxy socket: %w", err)
	}
	return ln, nil
}

// relays are the published ports' listeners.
type relays struct {
	lns   []net.Listener
	dirFD int
	wg    sync.WaitGroup
	// from reports whether a peer is the engine's port forwarder.
	from func(netip.Addr) bool
}

// engineForwarder returns the test of a published port's peer: only the engine's
// publishing on its host's 127.0.0.1 may connect. The engine forwards those
// connections from its host's address on the container's bridge, the companion's
// default gateway (its userland proxy dials from there; without it, its NAT rules
// masquerade the host's loopback as that address). Every other container on the
// bridge has an address of its own, so one that connects to the companion's address
// directly is turned away.
func engineForwarder() (func(netip.Addr) bool, error) {
	b, err := os.ReadFile("/proc/net/route")
	if err != nil {
		return nil, fmt.Errorf("reading the routes: %w", err)
	}
	gw, ok := defaultGateway(string(b))
	if !ok {
		return nil, fmt.Errorf("the companion has no default gateway: the engine cannot publish its ports")
	}
	return func(a netip.Addr) bool { return a.Unmap() == gw }, nil
}

func (r *relays) close() {
	for _, ln := range r.lns {
		ln.Close()
	}
	r.wg.Wait()
	if r.dirFD >= 0 {
		unix.Close(r.dirFD)
	}
}

// listenPublished makes the session's publish directory (mode 0700) and listens on
// every published port of req, relaying each connection to the sandbox's socket for
// it there.
func listenPublished(req Request, forwarder func() (func(netip.Addr) bool, error)) (*relays, error) {
	r := &relays{dirFD: -1}
	if len(req.Publish) == 0 {
		return r, nil
	}
	from, err := forwarder()
	if err != nil {
		return nil, fmt.Errorf("relaying published ports: %w", err)
	}
	r.from = from
	dir := filepath.Join(req.Dir, PublishDir(req.Session))
	if err := os.Mkdir(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating the publish directory: %w", err)
	}
	// The directory is writable from inside the sandbox: hold it by descriptor, so
	// what is renamed or planted in its place later is not followed.
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("opening the publish directory: %w", err)
	}
	r.dirFD = fd
	for _, port := range req.Publish {
		ln, err := net.Listen("tcp", ":"+strconv.Itoa(port.Listen))
		if err != nil {
			r.close()
			return nil, fmt.Errorf("relaying published port %d: %w", port.Sandbox, err)
		}
		r.lns = append(r.lns, ln)
		r.wg.Add(1)
		go r.serve(ln, PublishSocket(port.Sandbox))
	}
	return r, nil
}

func (r *relays) serve(ln net.Listener, sock string) {
	defer r.wg.Done()
	accept.Loop(ln, func(c net.Conn) bool {
		if ap, err := netip.ParseAddrPort(c.RemoteAddr().String()); err != nil || !r.from(ap.Addr()) {
			c.Close()
			return true
		}
		go func() {
			u, err := relay.DialNoFollow(r.dirFD, sock)
			if err != nil {
				c.Close()
				return
			}
			relay.Conns(c, u)
		}()
		return true
	})
}
