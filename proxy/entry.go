package proxy

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"

	"github.com/devsandbox/devsandbox/egress"
)

// ErrInvalidEntry is the class of errors for an allow or deny entry outside the grammar
// (egress.ParseEntry, the only parser of it), and for other malformed policy settings.
var ErrInvalidEntry = errors.New("invalid egress entry")

type entryKind int

const (
	kindHost     entryKind = iota // an exact host name
	kindWildcard                  // "*.domain": names below domain, not domain itself
	kindPrefix                    // an IP address (a full-length prefix) or a CIDR
)

// entry is an egress.Entry in the form the proxy matches against.
type entry struct {
	text   string       // the entry in the grammar (egress.Entry.String); reported as Decision.Rule
	kind   entryKind    //
	name   string       // kindHost: the name; kindWildcard: ".domain" (lower case)
	prefix netip.Prefix // kindPrefix, with IPv4-mapped addresses unmapped
	port   int          // 0 matches every port
}

// matcher returns e as the proxy matches it.
func matcher(e egress.Entry) entry {
	m := entry{text: e.String(), port: int(e.Port)}
	switch {
	case e.IsAddress():
		m.kind, m.prefix = kindPrefix, unmapPrefix(e.Prefix)
	case e.Wildcard:
		m.kind, m.name = kindWildcard, "."+e.Host
	default:
		m.kind, m.name = kindHost, e.Host
	}
	return m
}

func matchers(es []egress.Entry) []entry {
	out := make([]entry, 0, len(es))
	for _, e := range es {
		out = append(out, matcher(e))
	}
	return out
}

// parseEntry parses s with egress.ParseEntry; errors match ErrInvalidEntry.
func parseEntry(s string) (entry, error) {
	e, err := egress.ParseEntry(s)
	if err != nil {
		return entry{}, fmt.Errorf("%w: %w", ErrInvalidEntry, err)
	}
	return matcher(e), nil
}

// unmapPrefix turns ::ffff:a.b.c.d/N (N ≥ 96) into a.b.c.d/(N-96), so IPv4 entries and
// destinations compare in one family.
func unmapPrefix(p netip.Prefix) netip.Prefix {
	if p.Addr().Is4In6() && p.Bits() >= 96 {
		return netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
	}
	return p
}

// targets reports whether a request for host:port, as the client named it, is one the
// entry names. An IP or CIDR entry matches a host given as an address, never a name
// resolving into it: where a secret goes, or which rule applies, is decided by what
// the client asked for, not by DNS.
func (e *entry) targets(host string, port int) bool {
	if !e.portMatches(port) {
		return false
	}
	if e.kind == kindPrefix {
		a, err := netip.ParseAddr(host)
		return err == nil && e.prefix.Contains(a.Unmap())
	}
	return e.nameMatches(host)
}

func (e *entry) portMatches(port int) bool { return e.port == 0 || e.port == port }

func (e *entry) nameMatches(host string) bool {
	switch e.kind {
	case kindHost:
		return host == e.name
	case kindWildcard:
		return len(host) > len(e.name) && strings.HasSuffix(host, e.name)
	}
	return false
}

func (e *entry) anyAddrIn(addrs []netip.Addr) bool {
	for _, a := range addrs {
		if e.kind == kindPrefix && e.prefix.Contains(a) {
			return true
		}
	}
	return false
}

func (e *entry) allAddrsIn(addrs []netip.Addr) bool {
	if e.kind != kindPrefix || len(addrs) == 0 {
		return false
	}
	for _, a := range addrs {
		if !e.prefix.Contains(a) {
			return false
		}
	}
	return true
}
