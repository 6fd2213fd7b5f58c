package config

import (
	"strconv"
	"strings"

	"github.com/devsandbox/devsandbox/egress"
	"github.com/devsandbox/devsandbox/internal/addrclass"
)

// ValidEgressEntry checks one egress.allow or egress.deny entry against the grammar
// shared by all of them (egress.ParseEntry, its only parser): a host name, "*.domain",
// an IP address or a CIDR, each with an optional ":port" (1-65535); an IPv6 address
// with a port in brackets. The error (matching ErrInvalid) says what is wrong with s.
func ValidEgressEntry(s string) error {
	if _, err := egress.ParseEntry(s); err != nil {
		return invalidf("%v", err)
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

// loopbackEntry says what a valid egress entry names when it names only unspecified
// or loopback addresses, in any form the proxy refuses as its own host's (the
// classifier the proxy decides by: addrclass.HostPrefix), or the local host by name
// (localhost, *.localhost); else "".
func loopbackEntry(entry string) string {
	e, err := egress.ParseEntry(entry)
	switch {
	case err != nil:
		return ""
	case e.Host != "":
		if addrclass.IsLoopbackName(e.Host) {
			return "a name for the local host"
		}
		return ""
	}
	return addrclass.HostPrefix(e.Prefix)
}

// checkLoopbackAllow refuses an allow entry of l that names only unspecified or
// loopback addresses, or localhost, unless egress.loopback_entries = "ignore" in l or
// a layer below it (cur). Such an entry cannot do what it seems to: the proxy never
// connects to the host's own loopback, and the sandbox's loopback is its own anyway.
func (l *layer) checkLoopbackAllow(src *source, cur string) error {
	if v := l.Egress.LoopbackEntries; v != nil {
		cur = *v
	}
	if cur == "ignore" {
		return nil
	}
	for i, e := range l.Egress.Allow {
		what := loopbackEntry(e)
		if what == "" {
			continue
		}
		hint := ""
		if strings.HasPrefix(e, "0.0.0.0") || strings.HasPrefix(e, "::") || strings.HasPrefix(e, "[::]") {
			hint = ` (it does not mean "everywhere": proxy.default = "allow" lets public hosts through)`
		}
		return src.fail("egress.allow", i, invalidf(
			"%q is %s%s: the egress proxy runs on your host and never connects to its loopback, whose services trust every local process, and the sandbox's own loopback needs no entry; remove it, or set egress.loopback_entries = \"ignore\" to drop such entries with a warning",
			e, what, hint))
	}
	return nil
}
