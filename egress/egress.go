// Package egress holds the one network rule model every isolator enforces. This build
// knows two modes: open (the host network) and none (no network at all); the proxy and
// allowlist modes and their renderers arrive with the filtering proxy.
package egress

import "fmt"

// Mode is the egress policy of a sandbox.
type Mode string

const (
	Open      Mode = "open"      // the host network, unfiltered
	None      Mode = "none"      // no network interfaces but loopback
	Proxy     Mode = "proxy"     // only the filtering proxy is reachable
	Allowlist Mode = "allowlist" // only allowed destinations are reachable
)

// Rules is the egress rule set carried by a Plan.
type Rules struct {
	Mode  Mode
	Allow []string
	Deny  []string
}

// ParseMode returns the Mode called s.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case Open, None, Proxy, Allowlist:
		return m, nil
	}
	return "", fmt.Errorf("unknown egress mode %q (want open, none, proxy or allowlist)", s)
}

// SharesHostNetwork reports whether the sandbox uses the host's network namespace.
func (r Rules) SharesHostNetwork() bool { return r.Mode == Open }
