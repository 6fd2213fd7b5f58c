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
//     --default (allow or deny), --allow and --deny once per entry, --git-push once per
//     ref pattern of the push policy and --git-ssh to let ssh through it; --mitm turns on
//     decryption with the CA in the environment, and --credential (JSON, once per
//     credential) names a credential's host, header and format and the variables
//     holding its value and placeholder (see proxy/handoff);
//   - the environment holds exactly those variables (and SSL_CERT_FILE, SSL_CERT_DIR
//     when the user set them: they choose the roots upstream servers are checked
//     against), so no secret is ever in argv;
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

	"github.com/devsandbox/devsandbox/egress"
	"github.com/devsandbox/devsandbox/proxy"
	"github.com/devsandbox/devsandbox/proxy/ca"
	"github.com/devsandbox/devsandbox/proxy/handoff"
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
	os.Exit(run(ctx, os.Args[1:], os.LookupEnv, os.NewFile(listenerFD, "listener"), os.NewFile(lifelineFD, "lifeline"), os.Stderr, true))
}

// options are the flags.
type options struct {
	session, logDir, def string
	allow, deny, gitPush []string
	mitm, gitSSH         bool
	creds                []handoff.Credential
}

// credentials is the --credential flag, once per credential.
type credentials []handoff.Credential

func (c *credentials) String() string { return fmt.Sprint(*c) }
func (c *credentials) Set(s string) error {
	cr, err := handoff.ParseCredential(s)
	if err == nil {
		*c = append(*c, cr)
	}
	return err
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
	fs.Var((*list)(&o.gitPush), "git-push", "ref pattern a git push may change (repeatable; none: no push policy)")
	fs.BoolVar(&o.gitSSH, "git-ssh", false, "let CONNECTs to port 22 through a push policy")
	fs.BoolVar(&o.mitm, "mitm", false, "decrypt HTTPS with the CA in $"+handoff.CAEnv)
	fs.Var((*credentials)(&o.creds), "credential", "credential, JSON (repeatable; values in the environment)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	return o, nil
}

// run serves ln until ctx is done or lifeline ends, and returns the exit status.
// getenv reads the environment (the CA and credential values). onHost is true in
// devsandbox-proxy, which runs on the sandbox's host: the host's loopback is then
// refused whatever the entries (tests reach their own loopback origins with false).
func run(ctx context.Context, args []string, getenv func(string) (string, bool), ln, lifeline *os.File, stderr io.Writer, onHost bool) int {
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
	allow, err := egress.ParseEntries(o.allow)
	var deny []egress.Entry
	if err == nil {
		deny, err = egress.ParseEntries(o.deny)
	}
	var pol *proxy.Policy
	if err == nil {
		pol, err = proxy.NewPolicy(allow, deny, o.def)
	}
	if err == nil {
		pol, err = pol.WithGitPush(o.gitPush, o.gitSSH)
	}
	if err != nil {
		return fail("egress policy: %v", err)
	}
	// The host's interface addresses are destinations only when listed, and on the
	// host its loopback never is.
	pol.IsLocal = proxy.HostAddresses(time.Second)
	pol.RefuseLoopback = onHost
	cfg := proxy.Config{Policy: pol, Session: o.session, LogDir: o.logDir}
	if err := secrets(&cfg, o, getenv); err != nil {
		return fail("%v", err)
	}
	l, err := net.FileListener(ln)
	if err != nil {
		return fail("fd %d is not a listening socket (devsandbox starts this program): %v", listenerFD, err)
	}
	ln.Close() // l holds a duplicate
	srv, err := proxy.New(cfg)
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

// secrets fills cfg's CA and credentials from the environment, as the flags name them.
func secrets(cfg *proxy.Config, o options, getenv func(string) (string, bool)) error {
	if o.mitm {
		pem, ok := getenv(handoff.CAEnv)
		if !ok {
			return fmt.Errorf("--mitm: $%s is not set", handoff.CAEnv)
		}
		c, err := ca.Parse([]byte(pem))
		if err != nil {
			return fmt.Errorf("--mitm: the CA in $%s: %w", handoff.CAEnv, err)
		}
		cfg.CA = &c.TLS
	}
	for _, c := range o.creds {
		// An unset value leaves the credential in place without one: nothing is added,
		// and its placeholder is still refused elsewhere.
		value, _ := getenv(c.ValueEnv)
		var placeholder string
		if c.PlaceholderEnv != "" {
			var ok bool
			if placeholder, ok = getenv(c.PlaceholderEnv); !ok {
				return fmt.Errorf("credential %s: $%s is not set", c.Name, c.PlaceholderEnv)
			}
		}
		cfg.Credentials = append(cfg.Credentials, proxy.Credential{
			Host: c.Host, Header: c.Header, Format: c.Format, Value: value, Placeholder: placeholder, Name: c.Name,
		})
	}
	return nil
}
