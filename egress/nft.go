package egress

import (
	"fmt"
	"strings"
)

// Table is the nft table devsandbox owns in a sandbox's network namespace.
const Table = "devsandbox"

// ProbeAddr is the destination of the probe rule, the first rule of every rendering
// of a Firewall: UDP to it is dropped, so a sandboxed process that sends a datagram
// there gets EPERM while the rules are in effect. Without them the datagram stays on
// the sandbox's own loopback, so the check sends nothing anywhere.
const ProbeAddr = "127.255.255.254:9"

const probeIP, probePort = "127.255.255.254", "9"

// nftReject answers a refused packet with ICMP administratively prohibited, so the
// sandboxed program's connect fails at once.
const nftReject = "reject with icmpx type admin-prohibited"

// NftScript renders fw as input for `nft -f -`. Drop matches and everything no match
// accepts are rejected (ICMP administratively prohibited), the probe is dropped.
func (fw Firewall) NftScript() string {
	var b strings.Builder
	fmt.Fprintf(&b, "table inet %s {\n", Table)
	b.WriteString("\tchain output {\n\t\ttype filter hook output priority 0; policy drop;\n")
	fmt.Fprintf(&b, "\t\tip daddr %s udp dport %s drop comment \"probe\"\n", probeIP, probePort)
	b.WriteString("\t\tct state established,related accept\n")
	b.WriteString("\t\toif \"lo\" accept\n")
	for _, m := range fw.Matches {
		family := "ip"
		if m.Dst.Addr().Is6() {
			family = "ip6"
		}
		verdict := "accept"
		if m.Verdict == Drop {
			verdict = nftReject
		}
		dst := m.Dst.String()
		if m.Dst.IsSingleIP() {
			dst = m.Dst.Addr().String()
		}
		if m.Port == 0 {
			fmt.Fprintf(&b, "\t\t%s daddr %s %s comment %q\n", family, dst, verdict, m.Why)
			continue
		}
		fmt.Fprintf(&b, "\t\t%s daddr %s meta l4proto { tcp, udp } th dport %d %s comment %q\n", family, dst, m.Port, verdict, m.Why)
	}
	// Refused connections fail at once (EHOSTUNREACH) instead of waiting out SYN
	// retries; the policy stays drop.
	fmt.Fprintf(&b, "\t\t%s comment \"default deny\"\n", nftReject)
	b.WriteString("\t}\n")
	// Nothing may enter but replies (and published ports, accepted by the forwarder).
	b.WriteString("\tchain input {\n\t\ttype filter hook input priority 0; policy drop;\n")
	b.WriteString("\t\tct state established,related accept\n\t\tiif \"lo\" accept\n\t}\n")
	b.WriteString("}\n")
	return b.String()
}

// IptablesCommands renders fw as iptables / ip6tables argument lists (the fallback
// where nft is missing), given the binaries' absolute paths.
func (fw Firewall) IptablesCommands(iptables, ip6tables string) [][]string {
	var out [][]string
	out = append(out, []string{iptables, "-w", "-A", "OUTPUT", "-d", probeIP, "-p", "udp", "--dport", probePort, "-j", "DROP"})
	for _, bin := range []string{iptables, ip6tables} {
		out = append(out,
			[]string{bin, "-w", "-P", "OUTPUT", "DROP"},
			[]string{bin, "-w", "-P", "INPUT", "DROP"},
			[]string{bin, "-w", "-A", "OUTPUT", "-m", "conntrack", "--ctstate", "ESTABLISHED,RELATED", "-j", "ACCEPT"},
			[]string{bin, "-w", "-A", "OUTPUT", "-o", "lo", "-j", "ACCEPT"},
			[]string{bin, "-w", "-A", "INPUT", "-m", "conntrack", "--ctstate", "ESTABLISHED,RELATED", "-j", "ACCEPT"},
			[]string{bin, "-w", "-A", "INPUT", "-i", "lo", "-j", "ACCEPT"},
		)
		v6 := bin == ip6tables
		reject := []string{"-j", "REJECT", "--reject-with", "icmp-admin-prohibited"}
		if v6 {
			reject[3] = "icmp6-adm-prohibited"
		}
		for _, m := range fw.Matches {
			if m.Dst.Addr().Is6() != v6 {
				continue
			}
			target := []string{"-j", "ACCEPT"}
			if m.Verdict == Drop {
				target = reject
			}
			if m.Port == 0 {
				out = append(out, append([]string{bin, "-w", "-A", "OUTPUT", "-d", m.Dst.String()}, target...))
				continue
			}
			for _, proto := range []string{"tcp", "udp"} {
				out = append(out, append([]string{bin, "-w", "-A", "OUTPUT", "-d", m.Dst.String(), "-p", proto, "--dport", fmt.Sprint(m.Port)}, target...))
			}
		}
		out = append(out, append([]string{bin, "-w", "-A", "OUTPUT"}, reject...))
	}
	return out
}
