package netfilter

import (
	"net/netip"

	"github.com/google/nftables/binaryutil"
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"

	"github.com/devsandbox/devsandbox/egress"
)

// rule is one nftables rule: its expressions and the comment kept in its user data.
type rule struct {
	exprs   []expr.Any
	comment string
}

// loopbackIndex is the interface index of lo in every network namespace
// (LOOPBACK_IFINDEX): nft resolves `oif "lo"` to it.
const loopbackIndex = 1

// reg is the register every expression loads into and compares.
const reg = unix.NFT_REG_1

var probe = netip.MustParseAddrPort(egress.ProbeAddr)

// rules translates fw into the rules of the output and input chains, in order, the
// way nft compiles egress.Firewall.NftScript; a match with a port becomes two rules,
// one for TCP and one for UDP, where the script has `meta l4proto { tcp, udp }`.
// fw must be valid.
func rules(fw egress.Firewall) (output, input []rule) {
	output = append(output,
		rule{comment: "probe", exprs: join(
			daddr(netip.PrefixFrom(probe.Addr(), probe.Addr().BitLen())),
			dport(unix.IPPROTO_UDP, probe.Port()),
			verdict(expr.VerdictDrop),
		)},
		rule{exprs: join(established(), verdict(expr.VerdictAccept))},
		rule{exprs: join(iface(expr.MetaKeyOIF), verdict(expr.VerdictAccept))},
	)
	for _, m := range fw.Matches {
		v := verdict(expr.VerdictAccept)
		if m.Verdict == egress.Drop {
			v = reject()
		}
		if m.Port == 0 {
			output = append(output, rule{comment: m.Why, exprs: join(daddr(m.Dst), v)})
			continue
		}
		for _, proto := range []byte{unix.IPPROTO_TCP, unix.IPPROTO_UDP} {
			output = append(output, rule{comment: m.Why, exprs: join(daddr(m.Dst), dport(proto, m.Port), v)})
		}
	}
	output = append(output, rule{comment: "default deny", exprs: reject()})
	input = []rule{
		{exprs: join(established(), verdict(expr.VerdictAccept))},
		{exprs: join(iface(expr.MetaKeyIIF), verdict(expr.VerdictAccept))},
	}
	return output, input
}

// reject is `reject with icmpx type admin-prohibited`: a refused connection fails at
// once instead of waiting out its retries.
func reject() []expr.Any {
	return []expr.Any{&expr.Reject{Type: unix.NFT_REJECT_ICMPX_UNREACH, Code: unix.NFT_REJECT_ICMPX_ADMIN_PROHIBITED}}
}

func join(parts ...[]expr.Any) []expr.Any {
	var out []expr.Any
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// daddr is `ip daddr p` or `ip6 daddr p`: the family, then the destination address,
// masked when p is a network.
func daddr(p netip.Prefix) []expr.Any {
	a := p.Addr()
	proto, offset := byte(unix.NFPROTO_IPV4), uint32(16) // iphdr.daddr
	if a.Is6() {
		proto, offset = unix.NFPROTO_IPV6, 24 // ipv6hdr.daddr
	}
	n := uint32(a.BitLen() / 8)
	out := []expr.Any{
		&expr.Meta{Key: expr.MetaKeyNFPROTO, Register: reg},
		&expr.Cmp{Op: expr.CmpOpEq, Register: reg, Data: []byte{proto}},
		&expr.Payload{DestRegister: reg, Base: expr.PayloadBaseNetworkHeader, Offset: offset, Len: n},
	}
	if p.Bits() < a.BitLen() {
		out = append(out, &expr.Bitwise{SourceRegister: reg, DestRegister: reg, Len: n, Mask: onesPrefix(p.Bits(), int(n)), Xor: make([]byte, n)})
	}
	return append(out, &expr.Cmp{Op: expr.CmpOpEq, Register: reg, Data: p.Masked().Addr().AsSlice()})
}

// onesPrefix returns n bytes whose first bits bits are set.
func onesPrefix(bits, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		switch {
		case bits >= 8:
			b[i], bits = 0xff, bits-8
		case bits > 0:
			b[i], bits = ^byte(0xff>>bits), 0
		}
	}
	return b
}

// dport is `meta l4proto proto th dport port`.
func dport(proto byte, port uint16) []expr.Any {
	return []expr.Any{
		&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: reg},
		&expr.Cmp{Op: expr.CmpOpEq, Register: reg, Data: []byte{proto}},
		&expr.Payload{DestRegister: reg, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2},
		&expr.Cmp{Op: expr.CmpOpEq, Register: reg, Data: binaryutil.BigEndian.PutUint16(port)},
	}
}

// established is `ct state established,related`.
func established() []expr.Any {
	return []expr.Any{
		&expr.Ct{Register: reg, Key: expr.CtKeySTATE},
		&expr.Bitwise{
			SourceRegister: reg, DestRegister: reg, Len: 4,
			Mask: binaryutil.NativeEndian.PutUint32(expr.CtStateBitESTABLISHED | expr.CtStateBitRELATED),
			Xor:  make([]byte, 4),
		},
		&expr.Cmp{Op: expr.CmpOpNeq, Register: reg, Data: make([]byte, 4)},
	}
}

// iface is `oif "lo"` (key MetaKeyOIF) or `iif "lo"` (MetaKeyIIF).
func iface(key expr.MetaKey) []expr.Any {
	return []expr.Any{
		&expr.Meta{Key: key, Register: reg},
		&expr.Cmp{Op: expr.CmpOpEq, Register: reg, Data: binaryutil.NativeEndian.PutUint32(loopbackIndex)},
	}
}

func verdict(k expr.VerdictKind) []expr.Any { return []expr.Any{&expr.Verdict{Kind: k}} }
