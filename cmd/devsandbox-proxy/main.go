// Command devsandbox-proxy is the egress proxy of one devsandbox session. It is a
// separate binary so that devsandbox itself never links the proxy's HTTP stack (whose
// package init would slow every launch, in every egress mode); devsandbox starts it
// only in the proxy and allowlist modes.
//
// Its caller is devsandbox, and the contract is:
//   - fd 3 is a listening Unix socket, already bound (mode 0600) by devsandbox, so
//     clients may connect before this program runs: they queue until it accepts;
//   - fd 4 is the read end of the lifeline pipe; devsandbox holds the write end, so
//     end of file means devsandbox is done or gone;
//   - the flags carry the policy and the session (no secrets): --session, --log-dir,
//     --default (allow or deny), and --allow and --deny once per entry;
//   - devsandbox sets Pdeathsig SIGTERM and starts it in its own process group, so a
//     Ctrl-C at the terminal does not reach it.
//
// It serves on fd 3 until the lifeline ends or SIGTERM or SIGINT arrives, then shuts
// down: it stops accepting, gives requests and tunnels in flight up to two seconds,
// and syncs and closes the audit log. It never removes the socket file; that is the
// binder's. Exit status: 0 after a clean shutdown, 1 when the shutdown had to cut
// requests short or could not flush the log, 2 when it could not start.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/devsandbox/devsandbox/proxy"
)

// Descriptors devsandbox passes (os/exec ExtraFiles start at 3).
const (
	listenerFD = 3
	lifelineFD = 4
)

// shutdownGrace bounds the wait for requests and tunnels in flight at shutdown;
// devsandbox waits a little longer than this for the process to exit.
const shutdownGrace = 2 * time.Second

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.NewFile(listenerFD, "listener"), os.NewFile(lifelineFD, "lifeline"), os.Stderr))
}

// options are the flags.
type options struct {
	session, logDir, def string
	allow, deny          []string
}

// list is a flag that may be given once per entry.
type list []string

func (l *list) String() string     { return strings.Join(*l, ",") }
func (l *list) Set(s string) error { *l = append(*l, s); return nil }

func parseFlags(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("devsandbox-proxy", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.session, "session", "", "session id, recorded in every audit record")
	fs.StringVar(&o.logDir, "log-dir", "", "audit log directory (\"\": keep no log)")
	fs.StringVar(&o.def, "default", "allow", "policy default: allow or deny")
	fs.Var((*list)(&o.allow), "allow", "allow entry (repeatable)")
	fs.Var((*list)(&o.deny), "deny", "deny entry (repeatable)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	return o, nil
}

// run serves ln until ctx is done or lifeline ends, and returns the exit status.
func run(ctx context.Context, args []string, ln, lifeline *os.File, stderr io.Writer) int {
	fail := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "devsandbox-proxy: "+format+"\n", a...)
		return 2
	}
	o, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 2
	}
	if err != nil {
		return fail("%v", err)
	}
	pol, err := proxy.NewPolicy(o.allow, o.deny, o.def)
	if err != nil {
		return fail("egress policy: %v", err)
	}
	pol.IsLocal = proxy.HostAddresses(time.Second)
	l, err := net.FileListener(ln)
	if err != nil {
		return fail("fd %d is not a listening socket (devsandbox starts this program): %v", listenerFD, err)
	}
	ln.Close() // l holds a duplicate
	srv, err := proxy.New(proxy.Config{Policy: pol, Session: o.session, LogDir: o.logDir})
	if err != nil {
		return fail("%v", err)
	}
	srv.Serve(l)

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		defer cancel()
		if _, err := io.Copy(io.Discard, lifeline); err != nil {
			fmt.Fprintf(stderr, "devsandbox-proxy: reading the lifeline (fd %d): %v\n", lifelineFD, err)
		}
	}()
	<-ctx.Done()

	sctx, scancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer scancel()
	if err := srv.Shutdown(sctx); err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("requests still open after %v were cut short: %w", shutdownGrace, err)
		}
		fmt.Fprintf(stderr, "devsandbox-proxy: shutting down: %v\n", err)
		return 1
	}
	return 0
}
