package proxy

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/devsandbox/devsandbox/egress"
	"github.com/devsandbox/devsandbox/proxy/audit"
)

// Decision is the outcome of Policy.Decide.
type Decision struct {
	Allow  bool
	Rule   string // the entry that decided, as written, or audit.RuleDefault, RulePrivate or RuleHost
	Reason string // why, in words, for logs and the 403 body
	// Special is the class of special-purpose address (audit.ClassLoopback, …) that
	// decided a RulePrivate or RuleHost denial, and Addr that address.
	Special string
	Addr    netip.Addr
}

// Policy decides which destinations the proxy may reach. It is immutable once built and
// safe for concurrent use.
//
// Order: a matching deny entry denies (deny wins over allow); then an unspecified
// address (0.0.0.0/8, ::, which reach this host when dialled) is refused whatever the
// entries, and so is a loopback address under RefuseLoopback (audit.RuleHost); then
// every resolved address in a special-purpose range (private, loopback, link-local,
// CGNAT, multicast, reserved, metadata; see audit.Classify) must be named by an allow
// entry —
// an IP or CIDR entry containing it, or an exact host-name entry for the host asked
// for (a wildcard never names one; no name names a class audit.ByAddressOnly reports) — else the
// destination is denied with audit.RulePrivate;
// then a matching allow entry allows; else the default applies.
//
// Matching: a host entry matches the name exactly (case-insensitive, trailing dot
// ignored); "*.domain" matches names below domain, not domain itself; an IP or CIDR
// allow entry matches when every address lies in it, a deny entry when any does. An
// entry with a port matches that port only.
type Policy struct {
	allow, deny  []entry
	defaultAllow bool
	// IsLocal, when set, reports whether an address belongs to this host (any of its
	// interfaces): such destinations, private or public, are refused unless an IP or
	// CIDR allow entry names them, since a service bound to 0.0.0.0 listens there too.
	IsLocal func(netip.Addr) bool
	// RefuseLoopback refuses loopback addresses whatever the entries: set it when the
	// proxy runs on a host the sandbox must not reach, where the loopback is that
	// host's, and its services trust every local process.
	RefuseLoopback bool

	rules   []requestRule       // see WithRequestRules
	gitPush []egress.RefPattern // see WithGitPush
	gitSSH  bool
}

// NewPolicy builds a Policy from allow and deny entries (egress.ParseEntry's) and a
// default, "allow" or "deny" ("" means "allow", the DESIGN default). Errors match
// ErrInvalidEntry.
func NewPolicy(allow, deny []egress.Entry, def string) (*Policy, error) {
	p := &Policy{allow: matchers(allow), deny: matchers(deny)}
	switch def {
	case "", "allow":
		p.defaultAllow = true
	case "deny":
	default:
		return nil, fmt.Errorf("%w: proxy default %q (want allow or deny)", ErrInvalidEntry, def)
	}
	return p, nil
}

// Decide decides on host:port reached at addrs. When host is an IP literal, addrs is
// ignored and the literal is the address. With no addrs for a name, only name entries
// and the default apply: the dialer uses that to refuse a denied name before resolving
// it, and always decides again on the resolved addresses.
func (p *Policy) Decide(host string, port int, addrs []netip.Addr) Decision {
	host = normalizeHost(host)
	if lit, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{lit.WithZone("").Unmap()}
	} else {
		addrs = unmapAll(addrs)
	}
	for _, e := range p.deny {
		if e.portMatches(port) && (e.nameMatches(host) || e.anyAddrIn(addrs)) {
			return Decision{Rule: e.text, Reason: "it matches a deny entry"}
		}
	}
	for _, a := range addrs {
		// One of this host's addresses (or a NAT64 one reaching it) is "this host" in
		// whatever range it lies: its LAN and bridge addresses too.
		class, what := audit.ClassifyAt(a, p.IsLocal)
		switch {
		case class == audit.ClassUnspecified || class == audit.ClassLoopback && p.RefuseLoopback:
			return Decision{Rule: audit.RuleHost, Special: class, Addr: a,
				Reason: privateReason(host, a, what) + ": the proxy's own host, which no allow entry opens"}
		case class != "" && !p.names(host, port, a, class):
			return Decision{Rule: audit.RulePrivate, Reason: privateReason(host, a, what), Special: class, Addr: a}
		}
	}
	for _, e := range p.allow {
		if e.portMatches(port) && (e.nameMatches(host) || e.allAddrsIn(addrs)) {
			return Decision{Allow: true, Rule: e.text, Reason: "it matches an allow entry"}
		}
	}
	if p.defaultAllow {
		return Decision{Allow: true, Rule: audit.RuleDefault, Reason: "the proxy default is allow"}
	}
	return Decision{Rule: audit.RuleDefault, Reason: "no allow entry matches and the proxy default is deny"}
}

// names reports whether an allow entry names the special address a, of class, for
// host:port.
func (p *Policy) names(host string, port int, a netip.Addr, class string) bool {
	byName := !audit.ByAddressOnly(class)
	for _, e := range p.allow {
		if !e.portMatches(port) {
			continue
		}
		if byName && e.kind == kindHost && e.name == host || e.kind == kindPrefix && e.prefix.Contains(a) {
			return true
		}
	}
	return false
}

func privateReason(host string, a netip.Addr, what string) string {
	if _, err := netip.ParseAddr(host); err == nil {
		return fmt.Sprintf("%s is %s", host, what)
	}
	return fmt.Sprintf("%s resolves to %s, %s", host, a, what)
}

// normalizeHost lower-cases a host and drops a trailing dot and IPv6 brackets.
func normalizeHost(h string) string {
	h = strings.TrimSuffix(strings.ToLower(h), ".")
	if strings.HasPrefix(h, "[") && strings.HasSuffix(h, "]") {
		h = h[1 : len(h)-1]
	}
	return h
}

func unmapAll(addrs []netip.Addr) []netip.Addr {
	out := make([]netip.Addr, 0, len(addrs))
	for _, a := range addrs {
		out = append(out, a.WithZone("").Unmap())
	}
	return out
}
