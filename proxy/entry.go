package proxy

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// ErrInvalidEntry is the class of errors for an allow or deny entry outside the grammar.
var ErrInvalidEntry = errors.New("invalid egress entry")

type entryKind int

const (
	kindHost     entryKind = iota // an exact host name
	kindWildcard                  // "*.domain": names below domain, not domain itself
	kindPrefix                    // an IP address (a full-length prefix) or a CIDR
)

// entry is one parsed allow or deny entry.
type entry struct {
	text   string       // as written; reported as Decision.Rule
	kind   entryKind    //
	name   string       // kindHost: the name; kindWildcard: ".domain" (lower case)
	prefix netip.Prefix // kindPrefix, with IPv4-mapped addresses unmapped
	port   int          // 0 matches every port
}

// parseEntry parses the DESIGN grammar: host, *.domain, IP or CIDR, each with an
// optional ":port"; an IPv6 address or CIDR is bare, or bracketed when it has a port.
func parseEntry(s string) (entry, error) {
	e := entry{text: s}
	host, port, err := splitEntry(s)
	if err == nil && port != "" {
		e.port, err = parsePort(port)
	}
	if err == nil {
		err = e.parseHost(host)
	}
	if err != nil {
		return entry{}, fmt.Errorf("%w %q: %v", ErrInvalidEntry, s, err)
	}
	return e, nil
}

func splitEntry(s string) (host, port string, err error) {
	switch {
	case s == "":
		return "", "", errors.New("empty")
	case s[0] == '[':
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return "", "", errors.New("missing ']'")
		}
		host, rest := s[1:end], s[end+1:]
		if !strings.Contains(host, ":") {
			return "", "", errors.New("brackets hold an IPv6 address or CIDR only")
		}
		if rest == "" {
			return host, "", nil
		}
		if rest[0] != ':' || rest == ":" {
			return "", "", errors.New(`only ":port" may follow ']'`)
		}
		return host, rest[1:], nil
	case strings.Count(s, ":") == 1:
		host, port, _ = strings.Cut(s, ":")
		if port == "" {
			return "", "", errors.New("empty port")
		}
		return host, port, nil
	}
	return s, "", nil // a name, IPv4, or a bare IPv6 address or CIDR
}

func parsePort(p string) (int, error) {
	n, err := strconv.Atoi(p)
	if err != nil || p[0] == '+' || p[0] == '-' || n < 1 || n > 65535 {
		return 0, fmt.Errorf("port %q is not a number from 1 to 65535", p)
	}
	return n, nil
}

func (e *entry) parseHost(h string) error {
	if strings.Contains(h, "/") {
		p, err := netip.ParsePrefix(h)
		if err != nil {
			return fmt.Errorf("%q is not a CIDR", h)
		}
		e.kind, e.prefix = kindPrefix, unmapPrefix(p.Masked())
		return nil
	}
	if a, err := netip.ParseAddr(h); err == nil {
		if a.Zone() != "" {
			return errors.New("an address with a zone is not an entry")
		}
		a = a.Unmap()
		e.kind, e.prefix = kindPrefix, netip.PrefixFrom(a, a.BitLen())
		return nil
	}
	if strings.Contains(h, ":") || onlyDigitsAndDots(h) {
		return fmt.Errorf("%q is not an IP address", h)
	}
	e.kind, e.name = kindHost, strings.ToLower(h)
	if rest, ok := strings.CutPrefix(e.name, "*."); ok {
		e.kind, e.name = kindWildcard, "."+rest
		h = rest
	}
	if !validHostName(h) {
		return fmt.Errorf("%q is not a host name, *.domain, IP address or CIDR", h)
	}
	return nil
}

// unmapPrefix turns ::ffff:a.b.c.d/N (N ≥ 96) into a.b.c.d/(N-96), so IPv4 entries and
// destinations compare in one family.
func unmapPrefix(p netip.Prefix) netip.Prefix {
	if p.Addr().Is4In6() && p.Bits() >= 96 {
		return netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
	}
	return p
}

func onlyDigitsAndDots(s string) bool {
	return strings.Trim(s, "0123456789.") == ""
}

// validHostName checks DNS labels: 1-63 letters, digits, '-' or '_', not starting or
// ending with '-'; at most 253 characters in all.
func validHostName(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	for label := range strings.SplitSeq(s, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, c := range []byte(label) {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}
