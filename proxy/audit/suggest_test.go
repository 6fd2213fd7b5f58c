package audit

import (
	"slices"
	"testing"
)

func TestSuggest(t *testing.T) {
	deny := func(host string, port int, rule string) Record {
		return Record{Host: host, Port: port, Decision: DecisionDeny, Rule: rule}
	}
	recs := []Record{
		deny("b.example.com", 443, RuleDefault),
		deny("a.example.com", 80, RuleDefault),
		deny("b.example.com", 443, RuleDefault),
		deny("api.test", 8443, RuleDefault),
		deny("nas.lan", 443, RulePrivate),
		deny("10.0.0.5", 22, RulePrivate),
		deny("2001:db8::1", 8080, RuleDefault),
		deny("2001:db8::2", 443, RuleDefault),
		deny("evil.test", 443, "evil.test"), // a deny entry: no allow entry helps
		deny("x.test", 80, RuleAuth),
		{Host: "ok.test", Port: 443, Decision: DecisionAllow, Rule: RuleDefault},
	}
	want := []string{"10.0.0.5:22", "2001:db8::2", "[2001:db8::1]:8080", "a.example.com", "api.test:8443", "b.example.com", "nas.lan"}
	if got := Suggest(recs); !slices.Equal(got, want) {
		t.Errorf("Suggest = %q\nwant %q", got, want)
	}
}
