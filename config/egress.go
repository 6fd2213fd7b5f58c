package config

import (
	"strconv"
	"strings"

	"github.com/devsandbox/devsandbox/egress"
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
