// Command devsandbox-proxy is the egress proxy of one devsandbox session. It is a
// separate program so that devsandbox itself never links the proxy's HTTP stack (whose
// package init would slow every launch, in every egress mode); devsandbox starts it
// only in the proxy and allowlist modes, when the sandbox first connects, through
// package handoff (see proxy/service for the caller's side):
//   - the request's Settings (proxy/service.Settings) carry the policy, the session
//     and the audit log's directory, and name the variables holding the secrets;
//   - the environment holds exactly those variables (and SSL_CERT_FILE, SSL_CERT_DIR
//     when the user set them: they choose the roots upstream servers are checked
//     against), so no secret is ever in argv;
//   - descriptor handoff.FirstExtraFD is the listening Unix socket, already bound
//     (mode 0600), so clients may connect before this program runs: they queue until
//     it accepts; the next, under Settings.Listeners, a channel on which listening
//     TCP sockets are handed to it (a bwrap sandbox's 127.0.0.1:3128). Under
//     Settings.NoSocket (bwrap) there is no socket and the channel comes first;
//   - devsandbox starts it in its own process group, with SIGTERM as its parent-death
//     signal, so a Ctrl-C at the terminal does not reach it.
//
// Run as `devsandbox-proxy make-proxy-ca DIR NAME` (ca.CreateArg) it makes or renews
// the project's MITM CA in DIR (ca.LoadOrCreate) and exits: devsandbox links no
// crypto package and has the CA made here.
//
// Run as `devsandbox-proxy companion` it is the session's proxy inside a docker
// engine instead, in a companion container beside the sandbox (see proxy/companion):
// the request and its secrets arrive on stdin, the proxy listens in the endpoint
// volume the sandbox shares, and the audit records go to stdout, for the host to
// relay into its log.
//
// It serves until the control pipe ends (devsandbox is done or gone) or SIGTERM or
// SIGINT arrives, then shuts down: it stops accepting, gives requests and tunnels in
// flight up to two seconds, and syncs and closes the audit log. It never removes the
// socket file; that is the binder's. The result's code: 0 after a clean shutdown, 1
// when the shutdown had to cut requests short or could not flush the log, 2 when it
// could not start.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/devsandbox/devsandbox/internal/hostaddr"
	"github.com/devsandbox/devsandbox/internal/nocore"
	"github.com/devsandbox/devsandbox/internal/termsafe"
	"github.com/devsandbox/devsandbox/isolator/handoff"
	"github.com/devsandbox/devsandbox/proxy"
	"github.com/devsandbox/devsandbox/proxy/ca"
	"github.com/devsandbox/devsandbox/proxy/companion"
	"github.com/devsandbox/devsandbox/proxy/service"
)

// shutdownGrace bounds the wait for requests and tunnels in flight at shutdown;
// devsandbox waits a little longer than this for the process to exit.
const shutdownGrace = 2 * time.Second

// maxProcs is how many threads run the proxy's Go code at once. One session's
// traffic is mostly small requests, where every hand-off between threads is a
// wake-up (expensive in a VM): with one, a small request's added latency fell from
// +0.91-1.26 ms to +0.59-0.88 ms (p50, `make bench`, 2-core VM, alternating), with
// bulk tunnels and plain downloads unchanged (they are spliced or copied by the
// kernel, which one thread drives at several hundred MB/s: more than a real
// network link).
const maxProcs = 1

func main() {
	// It holds secrets (package nocore): no core of it may land in a working directory.
	if err := nocore.Off(); err != nil {
		fmt.Fprintf(os.Stderr, "%s: cannot turn off core dumps: %v\n", service.Program, err)
		os.Exit(2)
	}
	runtime.GOMAXPROCS(maxProcs)
	if len(os.Args) == 3 && os.Args[1] == companion.Arg && os.Args[2] == companion.HoldArg {
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
		code := companion.Hold(ctx, os.Stderr)
		stop()
		os.Exit(code)
	}
	if len(os.Args) == 2 && os.Args[1] == companion.HostAddressesArg {
		os.Exit(printHostAddresses(os.Stdout, os.Stderr))
	}
	if len(os.Args) == 2 && os.Args[1] == companion.Arg {
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
		defer stop()
		if os.Getpid() != 1 {
			// Exec'd into a kept container's companion, beside its holder (the
			// companion's spec has no init of the engine's: a session's own
			// companion is this process, its pid 1).
			os.Exit(companion.ServeHeld(ctx, os.Stdin, os.Stdout, os.Stderr, serveCompanion))
		}
		os.Exit(companion.Serve(ctx, os.Stdin, os.Stdout, os.Stderr, serveCompanion))
	}
	if len(os.Args) == 4 && os.Args[1] == ca.CreateArg {
		// devsandbox, which links no crypto package, has the project's CA made here.
		if _, err := ca.LoadOrCreate(os.Args[2], os.Args[3], time.Now()); err != nil {
			fmt.Fprintf(os.Stderr, "%s: %s\n", service.Program, termsafe.Line(err.Error()))
			os.Exit(2)
		}
		os.Exit(0)
	}
	if len(os.Args) != 2 || os.Args[1] != handoff.ServeArg {
		fmt.Fprintf(os.Stderr, "%s: the egress proxy of a devsandbox session; devsandbox starts it\n", service.Program)
		os.Exit(2)
	}
	os.Exit(handoff.Serve(func(j *handoff.Job) handoff.Result {
		ctx, stop := signal.NotifyContext(j.Ctx, syscall.SIGTERM, syscall.SIGINT)
		defer stop()
		var s service.Settings
		if err := json.Unmarshal(j.Settings, &s); err != nil {
			say(j.Stdio.Err, "bad settings: %v", err)
			return handoff.Result{Code: 2}
		}
		n := 1
		if s.Listeners && !s.NoSocket {
			n = 2
		}
		files := j.Files(n) // once: each *os.File closes its descriptor when collected
		return handoff.Result{Code: run(ctx, s, os.LookupEnv, files, j.Stdio.Err, true)}
	}, nil, nil, os.Stderr))
}

// run serves files[0], a listening socket, by s until ctx is done, and returns the
// result's code; files[1], when given, is the listener channel (service.Settings).
// Under s.NoSocket files[0] is the listener channel and there is no socket of its
// own. getenv reads the environment (the CA and credential values). onHost is true
// in devsandbox-proxy, which runs on the sandbox's host: the host's loopback is then
// refused whatever the entries (tests reach their own loopback origins with false).
func run(ctx context.Context, s service.Settings, getenv func(string) (string, bool), files []*os.File, stderr io.Writer, onHost bool) int {
	isLocal, err := proxy.HostAddresses(time.Second)
	if err != nil {
		say(stderr, "egress proxy: %v", err)
		return 2
	}
	at := place{refuseLoopback: onHost, isLocal: isLocal}
	if s.NoSocket {
		at.listeners = files[0]
		return serve(ctx, s, getenv, nil, stderr, at)
	}
	ln := files[0]
	listen := func() (net.Listener, error) {
		l, err := net.FileListener(ln)
		if err != nil {
			return nil, fmt.Errorf("fd %d is not a listening socket (devsandbox starts this program): %w", handoff.FirstExtraFD, err)
		}
		ln.Close() // l holds a duplicate
		return l, nil
	}
	if len(files) > 1 {
		at.listeners = files[1]
	}
	return serve(ctx, s, getenv, listen, stderr, at)
}

// serveCompanion is the proxy of a companion container (see proxy/companion): its
// loopback and the engine's host are refused as the host's own are on the host, and
// the audit log is a stream.
func serveCompanion(ctx context.Context, settings json.RawMessage, getenv func(string) (string, bool), isLocal func(netip.Addr) bool, ln net.Listener, log io.Writer) int {
	var s service.Settings
	if err := json.Unmarshal(settings, &s); err != nil {
		say(os.Stderr, "bad settings: %v", err)
		return 2
	}
	s.LogDir = ""
	return serve(ctx, s, getenv, func() (net.Listener, error) { return ln, nil }, os.Stderr, place{refuseLoopback: true, isLocal: isLocal, logTo: log})
}

// place is where the proxy runs: what it refuses as its host's own, where its audit
// log goes (nil logTo: the settings' LogDir), and the channel of listeners handed to
// it (service.Settings.Listeners; nil: none).
type place struct {
	refuseLoopback bool
	isLocal        func(netip.Addr) bool
	logTo          io.Writer
	listeners      *os.File
}

// serve serves the listener listen returns (none when listen is nil), and those
// handed on at.listeners, by s until ctx is done, and returns the exit code.
func serve(ctx context.Context, s service.Settings, getenv func(string) (string, bool), listen func() (net.Listener, error), stderr io.Writer, at place) int {
	fail := func(format string, a ...any) int {
		say(stderr, format, a...)
		return 2
	}
	pol, err := proxy.NewPolicy(s.Allow, s.Deny, s.Default)
	if err != nil {
		return fail("egress policy: %v", err)
	}
	pol = pol.WithGitPush(s.GitPush, s.GitSSH)
	// The host's interface addresses are destinations only when listed, and on the
	// host its loopback never is.
	pol.IsLocal = at.isLocal
	pol.RefuseLoopback = at.refuseLoopback
	cfg := proxy.Config{Policy: pol, Session: s.Session, LogDir: s.LogDir, LogTo: at.logTo}
	if err := secrets(&cfg, s, getenv); err != nil {
		return fail("%v", err)
	}
	var l net.Listener
	if listen != nil {
		if l, err = listen(); err != nil {
			return fail("%v", err)
		}
	}
	srv, err := proxy.New(cfg)
	if err != nil {
		return fail("%v", err)
	}
	if l != nil {
		srv.Serve(l)
	}
	if at.listeners != nil {
		// A listener handed after shutdown began is closed by Serve.
		go service.ReceiveListeners(at.listeners, srv.Serve, func(err error) {
			say(stderr, "%v", err)
		})
	}

	<-ctx.Done()

	sctx, scancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer scancel()
	if err := srv.Shutdown(sctx); err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("requests still open after %v were cut short: %w", shutdownGrace, err)
		}
		say(stderr, "shutting down: %v", err)
		return 1
	}
	return 0
}

// say writes one message of the proxy's on w, as one line a terminal shows as it is
// (termsafe.Line): the proxy runs beside the sandbox, and an error may name what the
// sandbox sent.
func say(w io.Writer, format string, a ...any) {
	fmt.Fprintf(w, "%s: %s\n", service.Program, termsafe.Line(fmt.Sprintf(format, a...)))
}

// secrets fills cfg's CA and credentials from the environment, as s names them.
func secrets(cfg *proxy.Config, s service.Settings, getenv func(string) (string, bool)) error {
	if s.MITM {
		pem, ok := getenv(service.CAVar)
		if !ok {
			return fmt.Errorf("mitm: $%s is not set", service.CAVar)
		}
		c, err := ca.Parse([]byte(pem))
		if err != nil {
			return fmt.Errorf("mitm: the CA in $%s: %w", service.CAVar, err)
		}
		cfg.CA = &c.TLS
	}
	for _, c := range s.Credentials {
		// An unset value leaves the credential in place without one: nothing is added,
		// and its placeholder is still refused elsewhere.
		value, _ := getenv(c.ValueVar)
		var placeholder string
		if c.PlaceholderVar != "" {
			var ok bool
			if placeholder, ok = getenv(c.PlaceholderVar); !ok {
				return fmt.Errorf("credential %s: $%s is not set", c.Name, c.PlaceholderVar)
			}
		}
		cfg.Credentials = append(cfg.Credentials, proxy.Credential{
			Host: c.Host, Header: c.Header, Format: c.Format, Value: value, Placeholder: placeholder, Name: c.Name,
		})
	}
	return nil
}

// printHostAddresses writes this host's interface addresses to out, one a line
// (companion.HostAddressesArg), and returns the exit code.
func printHostAddresses(out, stderr io.Writer) int {
	addrs, err := hostaddr.Read()
	if err != nil {
		say(stderr, "%v", err)
		return 2
	}
	var b strings.Builder
	for _, a := range addrs {
		b.WriteString(a.String() + "\n")
	}
	if _, err := io.WriteString(out, b.String()); err != nil {
		return 2
	}
	return 0
}
