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
	want := []string{"10.0.0.5:22", "100.64.1.1", "[2001:db8::1]:8080", "a.example.com", "api.test:8443", "b.example.com", "nas.lan"}
	if !slices.Equal(entries, want) {
		t.Errorf("Suggest = %q\nwant %q", entries, want)
	}
	for e, w := range map[string]bool{"10.0.0.5:22": true, "100.64.1.1": true, "nas.lan": true, "[2001:db8::1]:8080": true, "a.example.com": false, "api.test:8443": false} {
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
