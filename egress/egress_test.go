package egress

import (
	"context"
	"errors"
	"flag"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from %s:\n%s", name, path, got)
	}
}

func mustEntries(t *testing.T, ss ...string) []Entry {
	t.Helper()
	es, err := ParseEntries(ss)
	if err != nil {
		t.Fatal(err)
	}
	return es
}

func allowlistRules(t *testing.T) Rules {
	return Rules{
		Mode:  Allowlist,
		Allow: mustEntries(t, "10.231.0.2:8080", "192.0.2.0/24", "example.test:443", "*.wild.test", "[2001:db8::5]:443"),
		Deny:  mustEntries(t, "192.0.2.66", "blocked.test"),
		Resolved: []Resolved{
			{Host: "example.test", Port: 443, Addrs: []netip.Addr{netip.MustParseAddr("203.0.113.7"), netip.MustParseAddr("2001:db8::7")}},
			{Host: "blocked.test", Addrs: []netip.Addr{netip.MustParseAddr("203.0.113.66")}},
		},
	}
}

func TestCompile(t *testing.T) {
	fw, err := Compile(allowlistRules(t))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"drop 192.0.2.66/32 any (deny 192.0.2.66)",
		"drop 203.0.113.66/32 any (deny blocked.test)",
		"accept 10.231.0.2/32 8080 (allow 10.231.0.2:8080)",
		"accept 192.0.2.0/24 any (allow 192.0.2.0/24)",
		"accept 203.0.113.7/32 443 (allow example.test:443)",
		"accept 2001:db8::7/128 443 (allow example.test:443)",
		"accept 2001:db8::5/128 443 (allow [2001:db8::5]:443)",
	}
	var got []string
	for _, m := range fw.Matches {
		v, port := "accept", "any"
		if m.Verdict == Drop {
			v = "drop"
		}
		if m.Port != 0 {
			port = strconv.Itoa(int(m.Port))
		}
		got = append(got, v+" "+m.Dst.String()+" "+port+" ("+m.Why+")")
	}
	if !reflect.DeepEqual(got, want) || !fw.V4 || !fw.V6 {
		t.Fatalf("Compile:\n%s\nV4 %v V6 %v", strings.Join(got, "\n"), fw.V4, fw.V6)
	}
	if _, err := Compile(Rules{Mode: Allowlist, Allow: mustEntries(t, "unresolved.test")}); err == nil {
		t.Fatal("an unresolved plain host compiled")
	}
	if _, err := Compile(Rules{Mode: Open}); err == nil {
		t.Fatal("open mode compiled to a firewall")
	}
}

func TestRenderersGolden(t *testing.T) {
	r := allowlistRules(t)
	fw, err := Compile(r)
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "allowlist.nft", fw.NftScript())
	var ipt []string
	for _, c := range fw.IptablesCommands("/usr/sbin/iptables", "/usr/sbin/ip6tables") {
		ipt = append(ipt, strings.Join(c, " "))
	}
	golden(t, "allowlist.iptables", strings.Join(ipt, "\n")+"\n")
	pro, err := PastaPrologue(r, DefaultBinaries, 9)
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "allowlist.prologue.sh", pro)
	v4only := Rules{Mode: Proxy, Proxy: Endpoint{TCP: netip.MustParseAddrPort("192.0.2.1:3128")}}
	pro, err = PastaPrologue(v4only, DefaultBinaries, 9)
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "proxy-tcp.prologue.sh", pro)
	var cs []string
	for _, tg := range []Target{{UserFD: 3, NetFD: 4}, {NetFD: 3}, {PID: 4242}} {
		calls, err := NsenterCalls(r, tg, DefaultBinaries)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range calls {
			cs = append(cs, strings.Join(c.Argv, " "))
		}
		if calls[0].Stdin != fw.NftScript() {
			t.Fatal("nsenter nft call does not load the nft script")
		}
	}
	calls, err := NsenterCalls(v4only, Target{UserFD: 3, NetFD: 4}, DefaultBinaries)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range calls {
		cs = append(cs, strings.Join(c.Argv, " "))
	}
	golden(t, "allowlist.nsenter", strings.Join(cs, "\n")+"\n")
	if _, err := NsenterCalls(r, Target{}, DefaultBinaries); err == nil {
		t.Fatal("NsenterCalls without a target")
	}
}

// requireNamespaces skips without unprivileged user namespaces or nft; fails in CI.
func requireNamespaces(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(DefaultBinaries.Nft); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("nft is required in CI: %v", err)
		}
		t.Skip("nft not installed")
	}
	if err := exec.Command("unshare", "--user", "--map-root-user", "--net", "true").Run(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("user namespaces are required in CI: %v", err)
		}
		t.Skip("no user namespaces")
	}
}

// TestProbeAppliesRules applies the rules for real in a throwaway namespace.
func TestProbeAppliesRules(t *testing.T) {
	requireNamespaces(t)
	if err := Probe(context.Background(), SampleRules, DefaultBinaries); err != nil {
		t.Fatalf("Probe: %v", err)
	}
	if err := Probe(context.Background(), allowlistRules(t), DefaultBinaries); err != nil {
		t.Fatalf("Probe with names: %v", err)
	}
}

// TestProbeBrokenFirewall: a failing nft and no iptables abort with the reason.
func TestProbeBrokenFirewall(t *testing.T) {
	requireNamespaces(t)
	bin := DefaultBinaries
	bin.Nft, bin.Iptables = "/bin/false", "/nonexistent/iptables"
	err := Probe(context.Background(), SampleRules, bin)
	if !errors.Is(err, ErrFirewall) || !strings.Contains(err.Error(), "install nftables") {
		t.Fatalf("Probe with a broken nft: %v", err)
	}
	// nft broken, iptables present: the fallback applies the rules.
	if _, err := os.Stat(DefaultBinaries.Iptables); err == nil {
		bin.Iptables = DefaultBinaries.Iptables
		if err := Probe(context.Background(), SampleRules, bin); err != nil {
			t.Fatalf("iptables fallback: %v", err)
		}
	}
}
