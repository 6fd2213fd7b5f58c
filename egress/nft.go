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

// NftScript renders fw as input for `nft -f -`.
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
			verdict = "drop"
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
		for _, m := range fw.Matches {
			if m.Dst.Addr().Is6() != v6 {
				continue
			}
			target := "ACCEPT"
			if m.Verdict == Drop {
				target = "DROP"
			}
			if m.Port == 0 {
				out = append(out, []string{bin, "-w", "-A", "OUTPUT", "-d", m.Dst.String(), "-j", target})
				continue
			}
			for _, proto := range []string{"tcp", "udp"} {
				out = append(out, []string{bin, "-w", "-A", "OUTPUT", "-d", m.Dst.String(), "-p", proto, "--dport", fmt.Sprint(m.Port), "-j", target})
			}
		}
	}
	return out
}
