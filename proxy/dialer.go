package proxy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"time"

	"github.com/devsandbox/devsandbox/proxy/audit"
)

// ErrDenied is the class of errors for a destination the policy refuses.
var ErrDenied = errors.New("destination denied by policy")

// DeniedError reports a destination the policy refused, and why.
type DeniedError struct {
	Host     string
	Port     int
	Decision Decision
}

func (e *DeniedError) Error() string {
	return fmt.Sprintf("%s denied by rule %q: %s", hostPort(e.Host, e.Port), e.Decision.Rule, e.Decision.Reason)
}

// Is makes errors.Is(err, ErrDenied) true.
func (e *DeniedError) Is(target error) bool { return target == ErrDenied }

// Resolver looks up the addresses of a host name; *net.Resolver is one.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Dialer connects only to destinations its Policy allows, judged on the addresses it
// resolved itself: it resolves a name once, decides, and dials exactly the addresses
// it checked, so a second lookup cannot return something else (DNS rebinding).
type Dialer struct {
	Policy   *Policy
	Resolver Resolver // nil: net.DefaultResolver
	// Dial connects to a literal "ip:port"; nil: a net.Dialer with a 30 s timeout.
	Dial func(ctx context.Context, network, address string) (net.Conn, error)
}

// Target is a destination that passed the policy: the host and port asked for, and the
// checked addresses, the only ones DialTarget connects to.
type Target struct {
	Host     string
	Port     int
	Addrs    []netip.Addr
	Decision Decision
}

// Check resolves host and decides on it. A denial is a *DeniedError (matching
// ErrDenied) and its Decision; a name refused by a deny entry is not even resolved.
func (d *Dialer) Check(ctx context.Context, host string, port int) (Target, error) {
	host = normalizeHost(host)
	t := Target{Host: host, Port: port}
	t.Decision = d.Policy.Decide(host, port, nil)
	// A name refused by a deny entry, or by the default deny with no allow entry for
	// the name, is refused before any lookup: resolving it would already carry data out
	// (DNS exfiltration). Under a default of deny, IP and CIDR allow entries therefore
	// permit destinations given as addresses, not names that resolve into them.
	_, notAddress := netip.ParseAddr(host)
	if !t.Decision.Allow && (t.Decision.Rule != audit.RuleDefault || !d.Policy.defaultAllow && notAddress != nil) {
		return t, &DeniedError{Host: host, Port: port, Decision: t.Decision}
	}
	addrs, err := d.resolve(ctx, host)
	if err != nil {
		t.Decision = Decision{}
		return t, err
	}
	t.Addrs = addrs
	t.Decision = d.Policy.Decide(host, port, addrs)
	if !t.Decision.Allow {
		return t, &DeniedError{Host: host, Port: port, Decision: t.Decision}
	}
	return t, nil
}

func (d *Dialer) resolve(ctx context.Context, host string) ([]netip.Addr, error) {
	if a, err := netip.ParseAddr(host); err == nil {
		return []netip.Addr{a.Unmap()}, nil
	}
	r := d.Resolver
	if r == nil {
		r = net.DefaultResolver
	}
	addrs, err := r.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil, fmt.Errorf("resolving %s: %w", host, err)
	}
	addrs = slices.Compact(unmapAll(addrs))
	if len(addrs) == 0 {
		return nil, fmt.Errorf("resolving %s: no addresses", host)
	}
	return addrs, nil
}

// DialTarget connects to the first of t's checked addresses that answers.
func (d *Dialer) DialTarget(ctx context.Context, t Target) (net.Conn, error) {
	dial := d.Dial
	if dial == nil {
		dial = (&net.Dialer{Timeout: 30 * time.Second}).DialContext
	}
	var errs []error
	for _, a := range t.Addrs {
		c, err := dial(ctx, "tcp", netip.AddrPortFrom(a, uint16(t.Port)).String())
		if err == nil {
			return c, nil
		}
		errs = append(errs, err)
	}
	if len(errs) == 0 {
		return nil, fmt.Errorf("dialing %s: no checked address", hostPort(t.Host, t.Port))
	}
	return nil, fmt.Errorf("dialing %s: %w", hostPort(t.Host, t.Port), errors.Join(errs...))
}

// DialContext is Check then DialTarget, for "host:port"; it fits http.Transport.
func (d *Dialer) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	host, port, err := splitHostPort(address)
	if err != nil {
		return nil, err
	}
	t, err := d.Check(ctx, host, port)
	if err != nil {
		return nil, err
	}
	return d.DialTarget(ctx, t)
}

func splitHostPort(address string) (string, int, error) {
	host, p, err := net.SplitHostPort(address)
	if err != nil {
		return "", 0, err
	}
	port, err := parsePort(p)
	if err != nil {
		return "", 0, fmt.Errorf("%s: %w", address, err)
	}
	return host, port, nil
}

func parsePort(p string) (int, error) {
	n, err := strconv.Atoi(p)
	if err != nil || p[0] == '+' || p[0] == '-' || n < 1 || n > 65535 {
		return 0, fmt.Errorf("port %q is not a number from 1 to 65535", p)
	}
	return n, nil
}

func hostPort(host string, port int) string { return net.JoinHostPort(host, strconv.Itoa(port)) }
