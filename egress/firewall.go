package egress

import (
	"fmt"
	"net/netip"
	"sort"
)

// Verdict of a firewall match.
type Verdict int

const (
	Accept Verdict = iota
	Drop
)

// Match is one firewall rule: traffic to Dst (and Port, 0 = any; TCP and UDP) gets
// Verdict.
type Match struct {
	Verdict Verdict
	Dst     netip.Prefix
	Port    uint16
	Why     string // the entry it comes from, for comments
}

// Firewall is the intermediate form of Rules for a namespace with a route out:
// established and related traffic and loopback pass, then Matches in order (drops
// first: deny wins), then everything else is dropped. Outbound only: nothing is
// forwarded into the namespace except by the Forwards of the Rules.
type Firewall struct {
	Matches []Match
	// V4, V6 report whether any rule is of that family: a family without rules keeps
	// no default route.
	V4, V6 bool
}

// Compile returns the firewall for r. Wildcard names are proxy rules and have no
// firewall form; plain names must have been resolved into r.Resolved. Open and none
// need no firewall: Compile fails for them.
func Compile(r Rules) (Firewall, error) {
	if r.Mode == Open || r.Mode == None {
		return Firewall{}, fmt.Errorf("egress mode %s needs no firewall", r.Mode)
	}
	var fw Firewall
	add := func(v Verdict, p netip.Prefix, port uint16, why string) {
		fw.Matches = append(fw.Matches, Match{Verdict: v, Dst: p, Port: port, Why: why})
		if p.Addr().Is4() {
			fw.V4 = true
		} else {
			fw.V6 = true
		}
	}
	resolved := map[string][]netip.Addr{}
	for _, res := range r.Resolved {
		resolved[res.Host] = res.Addrs
	}
	for _, e := range r.Deny {
		switch {
		case e.IsAddress():
			add(Drop, e.Prefix, e.Port, "deny "+e.String())
		case !e.Wildcard:
			for _, a := range resolved[e.Host] {
				add(Drop, netip.PrefixFrom(a, a.BitLen()), e.Port, "deny "+e.String())
			}
		}
	}
	if r.Mode == Allowlist {
		for _, e := range r.Allow {
			switch {
			case e.IsAddress():
				add(Accept, e.Prefix, e.Port, "allow "+e.String())
			case !e.Wildcard:
				addrs, ok := resolved[e.Host]
				if !ok {
					return Firewall{}, fmt.Errorf("allow entry %s was not resolved at launch", e)
				}
				for _, a := range addrs {
					add(Accept, netip.PrefixFrom(a, a.BitLen()), e.Port, "allow "+e.String())
				}
			}
		}
	}
	if ap := r.Proxy.TCP; ap.IsValid() && !ap.Addr().IsLoopback() {
		add(Accept, netip.PrefixFrom(ap.Addr(), ap.Addr().BitLen()), ap.Port(), "proxy")
	}
	// Drops before accepts; within each, a stable order for golden files.
	sort.SliceStable(fw.Matches, func(i, j int) bool { return fw.Matches[i].Verdict > fw.Matches[j].Verdict })
	return fw, nil
}
