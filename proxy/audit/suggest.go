package audit

import (
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

// Suggest returns the allow entries that would have permitted the denied records:
// those denied by the default or as a special-purpose address (a deny entry wins over
// any allow entry, so those are left out). Entries are deduplicated and sorted; each is
// AllowEntry of the record's host and port.
func Suggest(records []Record) []string {
	seen := map[string]bool{}
	for _, r := range records {
		if r.Decision == DecisionDeny && (r.Rule == RuleDefault || r.Rule == RulePrivate) && r.Host != "" {
			seen[AllowEntry(r.Host, r.Port)] = true
		}
	}
	out := make([]string, 0, len(seen))
	for e := range seen {
		out = append(out, e)
	}
	slices.Sort(out)
	return out
}

// AllowEntry is the narrowest allow entry of the egress grammar that names host:port:
// the host alone for ports 0, 80 and 443, else host:port (an IPv6 address in
// brackets). It is never a wildcard, so it also names a special-purpose address the
// host resolves to.
func AllowEntry(host string, port int) string {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if strings.HasPrefix(host, "[") && strings.HasSuffix(host, "]") {
		host = host[1 : len(host)-1]
	}
	if port == 0 || port == 80 || port == 443 {
		return host
	}
	if a, err := netip.ParseAddr(host); err == nil && a.Is6() {
		return "[" + host + "]:" + strconv.Itoa(port)
	}
	return host + ":" + strconv.Itoa(port)
}
