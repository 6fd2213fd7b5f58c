// Package egress holds the one network rule model every isolator enforces, and its
// renderers. Rules (carried by the Plan) compile to a Firewall, the intermediate form:
// an ordered list of drop and accept matches with a default of drop. The Firewall is
// rendered as an nft script (iptables as a fallback), which is applied either by
// PastaPrologue — a shell prologue run as the namespace's root inside pasta's network
// namespace before it execs bwrap — or by NsenterCalls, commands run from outside into
// a container's or VM's network namespace. Everything here is pure.
package egress

import (
	"fmt"
	"net/netip"
)

// Mode is the egress policy of a sandbox.
type Mode string

const (
	Open      Mode = "open"      // the host network, unfiltered
	None      Mode = "none"      // no network interfaces but loopback
	Proxy     Mode = "proxy"     // only the filtering proxy is reachable
	Allowlist Mode = "allowlist" // only allowed destinations, and the proxy for names
)

// ParseMode returns the Mode called s.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case Open, None, Proxy, Allowlist:
		return m, nil
	}
	return "", fmt.Errorf("unknown egress mode %q (want open, none, proxy or allowlist)", s)
}

// Rules is the egress rule set carried by a Plan.
type Rules struct {
	Mode Mode
	// Proxy is where the session's filtering proxy listens on the host (proxy and
	// allowlist modes).
	Proxy Endpoint
	Allow []Entry
	Deny  []Entry
	// ProxyAllow are names allowed through the proxy only, never as firewall rules:
	// the egress hosts of the enabled tools.
	ProxyAllow []Entry
	// Resolved holds the plain host names of Allow resolved at launch (allowlist
	// mode): they become firewall rules and lines of the sandbox's /etc/hosts.
	Resolved []Resolved
	// Forwards are published ports: the host's 127.0.0.1:HostPort reaches the
	// sandbox's SandboxPort.
	Forwards []Forward
	// PublishDir is a private host directory shared with the sandbox, where a relay
	// inside serves each published port on a Unix socket named <SandboxPort>.sock.
	PublishDir string
	// ProxyPolicy is a digest of the proxy's own settings (default verdict, MITM,
	// credential rules — never their values), so a backend can tell two sessions'
	// policies apart.
	ProxyPolicy string
	// SocketDir is the project's private host directory that holds the session's
	// proxy socket (Proxy.Unix) and PublishDir. A kept container binds it whole: it
	// outlives sessions, and the socket names in it change with each.
	SocketDir string
}

// Endpoint is a proxy address: a Unix socket path or a TCP address.
type Endpoint struct {
	Unix string
	TCP  netip.AddrPort
}

// IsZero reports whether no endpoint is set.
func (e Endpoint) IsZero() bool { return e.Unix == "" && !e.TCP.IsValid() }

// Resolved is one host name and the addresses it had at launch.
type Resolved struct {
	Host  string
	Port  uint16
	Addrs []netip.Addr
}

// Forward is one published port.
type Forward struct {
	HostPort, SandboxPort uint16
}

// SharesHostNetwork reports whether the sandbox uses the host's network namespace.
func (r Rules) SharesHostNetwork() bool { return r.Mode == Open }

// NeedsProxy reports whether the mode routes traffic through the session proxy.
func (r Rules) NeedsProxy() bool { return r.Mode == Proxy || r.Mode == Allowlist }

// NeedsFirewall reports whether the mode needs rules in a namespace with a route out.
func (r Rules) NeedsFirewall() bool { return r.Mode == Allowlist }

// HostsFile returns the lines added to the sandbox's /etc/hosts: the names resolved
// at launch, so they resolve inside although DNS is closed.
func (r Rules) HostsFile() string {
	allowed := map[string]bool{}
	for _, e := range r.Allow {
		allowed[e.Host] = !e.Wildcard && !e.IsAddress()
	}
	var s string
	for _, res := range r.Resolved {
		if !allowed[res.Host] {
			continue
		}
		for _, a := range res.Addrs {
			s += a.String() + " " + res.Host + "\n"
		}
	}
	return s
}
