package proxy

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

// Suggest returns the allow entries that would have permitted the denied records:
// those denied by the default or as a special-purpose address (a deny entry wins over
// any allow entry, so those are left out). Entries are deduplicated and sorted; each is
// the host alone for ports 80 and 443, else host:port.
func Suggest(records []Record) []string {
	seen := map[string]bool{}
	for _, r := range records {
		if r.Decision == DecisionDeny && (r.Rule == RuleDefault || r.Rule == RulePrivate) && r.Host != "" {
			seen[allowEntryFor(r.Host, r.Port)] = true
		}
	}
	out := make([]string, 0, len(seen))
	for e := range seen {
		out = append(out, e)
	}
	slices.Sort(out)
	return out
}

// allowEntryFor is the narrowest entry of the grammar that names host (never a
// wildcard, so it also names a special-purpose address the host resolves to).
func allowEntryFor(host string, port int) string {
	host = normalizeHost(host)
	if port == 0 || port == 80 || port == 443 {
		return host
	}
	if a, err := netip.ParseAddr(host); err == nil && a.Is6() {
		return "[" + host + "]:" + strconv.Itoa(port)
	}
	return host + ":" + strconv.Itoa(port)
}

// denyBody is the text of a 403: the request, the rule and reason, and the flag that
// would allow it (or, for a deny entry, that no flag will).
func denyBody(method, host string, port int, d Decision) string {
	var b strings.Builder
	fmt.Fprintf(&b, "devsandbox proxy: %s %s refused by rule %q: %s.\n", method, hostPort(host, port), d.Rule, d.Reason)
	if d.Rule == RuleDefault || d.Rule == RulePrivate {
		fmt.Fprintf(&b, "To allow it, run devsandbox with --allow %s (or add it to egress.allow).\n", allowEntryFor(host, port))
	} else {
		fmt.Fprintf(&b, "A deny entry wins over every allow entry: remove %q from egress.deny to allow it.\n", d.Rule)
	}
	return b.String()
}
