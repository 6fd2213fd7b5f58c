package netfilter

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"reflect"
	"testing"

	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"

	"github.com/devsandbox/devsandbox/egress"
)

// The expected expressions are written out by hand, the way `nft --debug=netlink`
// lists them, rather than built with the helpers under test.
var (
	nfproto4 = []expr.Any{
		&expr.Meta{Key: expr.MetaKeyNFPROTO, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{unix.NFPROTO_IPV4}},
	}
	nfproto6 = []expr.Any{
		&expr.Meta{Key: expr.MetaKeyNFPROTO, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{unix.NFPROTO_IPV6}},
	}
	daddr4 = &expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: 16, Len: 4}
	daddr6 = &expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: 24, Len: 16}
	thport = &expr.Payload{DestRegister: 1, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2}
	accept = &expr.Verdict{Kind: expr.VerdictAccept}
	drop   = &expr.Verdict{Kind: expr.VerdictDrop}
	// reject with icmpx type admin-prohibited.
	rejectX = &expr.Reject{Type: unix.NFT_REJECT_ICMPX_UNREACH, Code: unix.NFT_REJECT_ICMPX_ADMIN_PROHIBITED}
	// ct state established,related (2|4, host byte order).
	ctEstablished = []expr.Any{
		&expr.Ct{Register: 1, Key: expr.CtKeySTATE},
		&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 4, Mask: host32(6), Xor: []byte{0, 0, 0, 0}},
		&expr.Cmp{Op: expr.CmpOpNeq, Register: 1, Data: []byte{0, 0, 0, 0}},
		accept,
	}
)

// host32 is v in host byte order, as nft stores interface indexes and ct state bits.
func host32(v uint32) []byte { return binary.NativeEndian.AppendUint32(nil, v) }

func cat(parts ...any) []expr.Any {
	var out []expr.Any
	for _, p := range parts {
		switch p := p.(type) {
		case []expr.Any:
			out = append(out, p...)
		case expr.Any:
			out = append(out, p)
		}
	}
	return out
}

func l4(proto byte) []expr.Any {
	return []expr.Any{
		&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{proto}},
	}
}

func eq(b ...byte) *expr.Cmp { return &expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: b} }

func TestRulesFixed(t *testing.T) {
	output, input := rules(egress.Firewall{})
	wantOut := []rule{
		{comment: "probe", exprs: cat(nfproto4, daddr4, eq(127, 255, 255, 254), l4(unix.IPPROTO_UDP), thport, eq(0, 9), drop)},
		{exprs: ctEstablished},
		{exprs: cat(&expr.Meta{Key: expr.MetaKeyOIF, Register: 1}, eq(host32(1)...), accept)},
		{comment: "default deny", exprs: cat(rejectX)},
	}
	wantIn := []rule{
		{exprs: ctEstablished},
		{exprs: cat(&expr.Meta{Key: expr.MetaKeyIIF, Register: 1}, eq(host32(1)...), accept)},
	}
	if !reflect.DeepEqual(output, wantOut) {
		t.Errorf("output chain:\n%s\nwant\n%s", dump(output), dump(wantOut))
	}
	if !reflect.DeepEqual(input, wantIn) {
		t.Errorf("input chain:\n%s\nwant\n%s", dump(input), dump(wantIn))
	}
}

func TestRulesMatches(t *testing.T) {
	for _, tc := range []struct {
		name  string
		match egress.Match
		want  []rule
	}{{
		name:  "IPv4 address",
		match: egress.Match{Verdict: egress.Accept, Dst: netip.MustParsePrefix("192.0.2.10/32"), Why: "allow 192.0.2.10"},
		want:  []rule{{comment: "allow 192.0.2.10", exprs: cat(nfproto4, daddr4, eq(192, 0, 2, 10), accept)}},
	}, {
		name:  "IPv4 network drop",
		match: egress.Match{Verdict: egress.Drop, Dst: netip.MustParsePrefix("198.51.100.0/23"), Why: "deny 198.51.100.0/23"},
		want: []rule{{comment: "deny 198.51.100.0/23", exprs: cat(nfproto4, daddr4,
			&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 4, Mask: []byte{255, 255, 254, 0}, Xor: []byte{0, 0, 0, 0}},
			eq(198, 51, 100, 0), rejectX)}},
	}, {
		name:  "IPv6 network with a port",
		match: egress.Match{Verdict: egress.Accept, Dst: netip.MustParsePrefix("2001:db8::/36"), Port: 443, Why: "allow [2001:db8::/36]:443"},
		want: func() []rule {
			mask := []byte{255, 255, 255, 255, 0xf0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
			net := []byte{0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
			m := cat(nfproto6, daddr6, &expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 16, Mask: mask, Xor: make([]byte, 16)}, eq(net...))
			return []rule{
				{comment: "allow [2001:db8::/36]:443", exprs: cat(m, l4(unix.IPPROTO_TCP), thport, eq(1, 187), accept)},
				{comment: "allow [2001:db8::/36]:443", exprs: cat(m, l4(unix.IPPROTO_UDP), thport, eq(1, 187), accept)},
			}
		}(),
	}, {
		name:  "IPv6 address drop",
		match: egress.Match{Verdict: egress.Drop, Dst: netip.MustParsePrefix("2001:db8::5/128"), Why: "deny 2001:db8::5"},
		want: []rule{{comment: "deny 2001:db8::5", exprs: cat(nfproto6, daddr6,
			eq(0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 5), rejectX)}},
	}, {
		name:  "everything",
		match: egress.Match{Verdict: egress.Accept, Dst: netip.MustParsePrefix("0.0.0.0/0"), Why: "allow 0.0.0.0/0"},
		want: []rule{{comment: "allow 0.0.0.0/0", exprs: cat(nfproto4, daddr4,
			&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 4, Mask: []byte{0, 0, 0, 0}, Xor: []byte{0, 0, 0, 0}},
			eq(0, 0, 0, 0), accept)}},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			output, _ := rules(egress.Firewall{Matches: []egress.Match{tc.match}})
			got := output[3 : len(output)-1] // after the probe, established and loopback rules, before the default deny
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got\n%s\nwant\n%s", dump(got), dump(tc.want))
			}
		})
	}
}

// TestRulesOrder: matches keep their order, one rule per match without a port and
// two with one.
func TestRulesOrder(t *testing.T) {
	fw, err := egress.Compile(egress.SampleRules)
	if err != nil {
		t.Fatal(err)
	}
	output, _ := rules(fw)
	var got []string
	for _, r := range output {
		got = append(got, r.comment)
	}
	want := []string{"probe", "", "", "deny 198.51.100.0/24",
		"allow 192.0.2.10:443", "allow 192.0.2.10:443", "allow [2001:db8::10]:443", "allow [2001:db8::10]:443", "default deny"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("rule comments %q, want %q", got, want)
	}
	if last := output[len(output)-1].exprs; !reflect.DeepEqual(last, []expr.Any{rejectX}) {
		t.Errorf("the last rule is %s, want a reject", dump(output[len(output)-1:]))
	}
}

func dump(rs []rule) string {
	var s string
	for _, r := range rs {
		s += "rule " + r.comment + ":\n"
		for _, e := range r.exprs {
			s += fmt.Sprintf("\t%T %+v\n", e, e)
		}
	}
	return s
}
