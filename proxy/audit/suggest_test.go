package audit

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func deny(host string, port int, rule, special string) Record {
	return Record{Host: host, Port: port, Decision: DecisionDeny, Rule: rule, Special: special}
}

// suggestRecords are denied records of every kind Suggest must tell apart.
var suggestRecords = []Record{
	deny("b.example.com", 443, RuleDefault, ""),
	deny("a.example.com", 80, RuleDefault, ""),
	deny("b.example.com", 443, RuleDefault, ""),
	deny("api.test", 8443, RuleDefault, ""),
	deny("nas.lan", 443, RulePrivate, ClassPrivate),
	deny("10.0.0.5", 22, RulePrivate, ""), // the address says its class
	deny("100.64.1.1", 443, RulePrivate, ClassCGNAT),
	deny("2001:db8::1", 8080, RuleDefault, ""),
	deny("evil.test", 443, "evil.test", ""), // a deny entry: no allow entry helps
	deny("x.test", 80, RuleAuth, ""),
	{Host: "ok.test", Port: 443, Decision: DecisionAllow, Rule: RuleDefault},
	{Kind: KindDropped, Decision: DecisionDeny, Dropped: 5},
	// never suggested
	deny("*.com", 443, RuleDefault, ""),
	deny("0.0.0.0", 443, RulePrivate, ""),
	deny("::", 443, RulePrivate, ""),
	deny("fe80::1%en0", 443, RulePrivate, ""),
	deny("127.0.0.1", 8080, RulePrivate, ""),
	deny("rebind.test", 80, RulePrivate, ClassLoopback),
	deny("localhost", 3000, RuleDefault, ""),
	deny("169.254.169.254", 80, RulePrivate, ""),
	deny("169.254.10.1", 443, RulePrivate, ""),
	deny("fe80::2", 443, RulePrivate, ""),
	deny("host.lan", 22, RulePrivate, ClassThisHost),
	deny("239.1.1.1", 80, RulePrivate, ""),
	deny("old.lan", 443, RulePrivate, ""), // a name from a log without the class
	deny("1.2.3", 80, RuleDefault, ""),
	deny("evil.test\n\"0.0.0.0\",", 80, RuleDefault, ""),
	{Host: "bad request.test", Port: 80, Decision: DecisionDeny, Rule: RuleBadRequest},
	{Host: "0.0.0.0", Port: 80, Decision: DecisionDeny, Rule: RuleHost, Special: ClassUnspecified},
}

func TestSuggest(t *testing.T) {
	sugg, held := Suggest(suggestRecords)
	var entries []string
	warned := map[string]bool{}
	for _, s := range sugg {
		entries = append(entries, s.Entry)
		warned[s.Entry] = s.Warning != ""
	}
	// Each keeps the port asked for, 80 and 443 too: a bare name would open every port.
	want := []string{"10.0.0.5:22", "100.64.1.1:443", "[2001:db8::1]:8080", "a.example.com:80", "api.test:8443", "b.example.com:443", "nas.lan:443"}
	if !slices.Equal(entries, want) {
		t.Errorf("Suggest = %q\nwant %q", entries, want)
	}
	for e, w := range map[string]bool{"10.0.0.5:22": true, "100.64.1.1:443": true, "nas.lan:443": true, "[2001:db8::1]:8080": true, "a.example.com:80": false, "api.test:8443": false} {
		if warned[e] != w {
			t.Errorf("%s: warning %v, want %v", e, warned[e], w)
		}
	}
	if len(held) != 15 {
		t.Errorf("withheld %d, want 15: %q", len(held), held)
	}
}

// TestFormatSuggestions: golden output; every line that is not a comment is an entry.
func TestFormatSuggestions(t *testing.T) {
	var b bytes.Buffer
	sugg, held := Suggest(suggestRecords)
	FormatSuggestions(&b, sugg, held)
	golden(t, "suggest.golden", b.Bytes())
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs:\n%s\nwant\n%s", name, got, want)
	}
}

// TestByAddressOnlySuggestedNever: every class a host-name entry cannot open is one
// Suggest never proposes, so no pasted suggestion is refused for it by surprise; the
// loopback and unspecified ones (never suggested either) are the proxy's to refuse.
func TestByAddressOnlySuggestedNever(t *testing.T) {
	for _, c := range []string{ClassThisHost, ClassLinkLocal, ClassMetadata, ClassMulticast} {
		if !ByAddressOnly(c) || !slices.Contains(never, c) {
			t.Errorf("%s: ByAddressOnly %v, never suggested %v; want both", c, ByAddressOnly(c), slices.Contains(never, c))
		}
	}
	for _, c := range []string{"", ClassPrivate, ClassCGNAT, ClassReserved, ClassProtocol, ClassDocumentation, ClassLoopback, ClassUnspecified} {
		if ByAddressOnly(c) {
			t.Errorf("%q: ByAddressOnly, want a name entry to name it (or the proxy to decide it whatever the entries)", c)
		}
	}
}

// TestSuggestWithholdsNumericNames: a name that a C resolver (getaddrinfo, inet_aton)
// reads as an IPv4 address in hex or octal parts is an address in disguise: pasted,
// "0xa9.0xfe.0xa9.0xfe" would be a name entry, which names the private addresses it
// resolves to, and with a C resolver it is 169.254.169.254 and "0x0a.1.2.3" 10.1.2.3,
// without a warning. Suggest withholds such names; names that only look alike stay.
func TestSuggestWithholdsNumericNames(t *testing.T) {
	var recs []Record
	disguised := []string{"0xa9.0xfe.0xa9.0xfe", "0xa9fea9fe", "0x7f.1", "0x0a.1.2.3", "0XA9.254.169.254", "0251.0376.0251.0376"}
	for _, h := range disguised {
		recs = append(recs, deny(h, 80, RuleDefault, ""))
	}
	names := []string{"0x.example", "0xcafe.example", "deadbeef", "0x", "0xg1.2.3.4", "1.2.3.4.5x"}
	for _, h := range names {
		recs = append(recs, deny(h, 443, RuleDefault, ""))
	}
	sugg, held := Suggest(recs)
	var got []string
	for _, s := range sugg {
		got = append(got, s.Entry)
	}
	want := []string{"0x.example:443", "0x:443", "0xcafe.example:443", "0xg1.2.3.4:443", "1.2.3.4.5x:443", "deadbeef:443"}
	if !slices.Equal(got, want) {
		t.Errorf("Suggest = %q\nwant %q", got, want)
	}
	if len(held) != len(disguised) {
		t.Errorf("withheld %q, want the %d disguised addresses", held, len(disguised))
	}
}
