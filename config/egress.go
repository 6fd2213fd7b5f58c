package config

import (
	"net/netip"
	"strconv"
	"strings"
)

// ValidEgressEntry checks one egress.allow or egress.deny entry against the grammar
// shared by all of them: a host name, "*.domain", an IP address or a CIDR, each with an
// optional ":port" (1-65535). An IPv6 address or CIDR is written bare, or in brackets
// when it has a port: "[2001:db8::1]:443". The error (matching ErrInvalid) says what is
// wrong with s.
func ValidEgressEntry(s string) error {
	if s == "" {
		return invalidf("an empty egress entry")
	}
	host, port := s, ""
	switch {
	case s[0] == '[':
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return invalidf("%q: missing ']' after the IPv6 address", s)
		}
		host, port = s[1:end], s[end+1:]
		if port != "" && port[0] != ':' {
			return invalidf("%q: only \":port\" may follow ']'", s)
		}
		if !isIPv6(host) {
			return invalidf("%q: brackets hold an IPv6 address or CIDR only", s)
		}
	case strings.Count(s, ":") == 1:
		host, port, _ = strings.Cut(s, ":")
		port = ":" + port
	case strings.Contains(s, ":"):
		if !isIPv6(s) {
			return invalidf("%q is not an IPv6 address or CIDR (write a port as [addr]:port)", s)
		}
		return nil
	}
	if port != "" {
		if err := validPort(port[1:]); err != nil {
			return invalidf("%q: %v", s, err)
		}
	}
	if s[0] == '[' {
		return nil
	}
	if err := validEgressHost(host); err != nil {
		if host == s {
			return err
		}
		return invalidf("%q: %v", s, err)
	}
	return nil
}

func validPort(p string) error {
	n, err := strconv.Atoi(p)
	if err != nil || p[0] == '+' || p[0] == '-' || n < 1 || n > 65535 {
		return invalidf("port %q is not a number from 1 to 65535", p)
	}
	return nil
}

func isIPv6(s string) bool {
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		return err == nil && p.Addr().Is6()
	}
	a, err := netip.ParseAddr(s)
	return err == nil && a.Is6() && a.Zone() == ""
}

// validEgressHost checks the part before any port: IPv4 address or CIDR, "*.domain" or
// a host name.
func validEgressHost(h string) error {
	switch h {
	case "":
		return invalidf("no host before the port")
	case "*":
		return invalidf(`a bare "*" is not an entry; a wildcard is written "*.domain"`)
	}
	if strings.Contains(h, "/") {
		if p, err := netip.ParsePrefix(h); err != nil || !p.Addr().Is4() {
			return invalidf("%q is not an IPv4 CIDR", h)
		}
		return nil
	}
	if looksNumeric(h) {
		if a, err := netip.ParseAddr(h); err != nil || !a.Is4() {
			return invalidf("%q is not an IPv4 address", h)
		}
		return nil
	}
	name := h
	if rest, ok := strings.CutPrefix(h, "*."); ok {
		name = rest
	}
	if !validHostName(name) {
		return invalidf("%q is not a host name, \"*.domain\", IP address or CIDR", h)
	}
	return nil
}

// looksNumeric reports whether s has only digits and dots, so it can only be an IPv4
// address: "1.2.3" is a bad address rather than a host name.
func looksNumeric(s string) bool {
	for i := 0; i < len(s); i++ {
		if (s[i] < '0' || s[i] > '9') && s[i] != '.' {
			return false
		}
	}
	return true
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
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}

// ValidPublish checks one egress.publish entry: "HOST_PORT:SANDBOX_PORT" or "PORT".
func ValidPublish(s string) error {
	host, sandbox, ok := strings.Cut(s, ":")
	if !ok {
		sandbox = host
	}
	for _, p := range []string{host, sandbox} {
		if err := validPort(p); err != nil {
			return invalidf("%q: %v (want HOST_PORT:SANDBOX_PORT)", s, err)
		}
	}
	return nil
}
