package egress

import (
	"errors"
	"net/netip"
)

// ErrFirewall is wrapped by errors that mean egress rules could not be applied.
var ErrFirewall = errors.New("egress rules could not be applied")

// SampleRules are applied by Probe: one allowed address and one denied range, in
// both families, so every kind of rule is exercised.
var SampleRules = Rules{
	Mode: Allowlist,
	Allow: []Entry{
		{Prefix: netip.MustParsePrefix("192.0.2.10/32"), Port: 443},
		{Prefix: netip.MustParsePrefix("2001:db8::10/128"), Port: 443},
	},
	Deny: []Entry{{Prefix: netip.MustParsePrefix("198.51.100.0/24")}},
}
