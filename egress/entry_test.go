package egress

import (
	"net/netip"
	"strings"
	"testing"
)

func TestParseEntry(t *testing.T) {
	tests := []struct {
		in   string
		want Entry
		str  string
	}{
		{"github.com", Entry{Host: "github.com"}, "github.com"},
		{"GitHub.com.", Entry{Host: "github.com"}, "github.com"},
		{"github.com:22", Entry{Host: "github.com", Port: 22}, "github.com:22"},
		{"*.npmjs.org", Entry{Host: "npmjs.org", Wildcard: true}, "*.npmjs.org"},
		{"*.npmjs.org:443", Entry{Host: "npmjs.org", Wildcard: true, Port: 443}, "*.npmjs.org:443"},
		{"10.1.2.3", Entry{Prefix: netip.MustParsePrefix("10.1.2.3/32")}, "10.1.2.3"},
		{"10.1.2.3:8080", Entry{Prefix: netip.MustParsePrefix("10.1.2.3/32"), Port: 8080}, "10.1.2.3:8080"},
		{"10.1.2.0/24", Entry{Prefix: netip.MustParsePrefix("10.1.2.0/24")}, "10.1.2.0/24"},
		{"10.1.2.9/24:53", Entry{Prefix: netip.MustParsePrefix("10.1.2.0/24"), Port: 53}, "10.1.2.0/24:53"},
		{"2001:db8::1", Entry{Prefix: netip.MustParsePrefix("2001:db8::1/128")}, "2001:db8::1"},
		{"2001:db8::/32", Entry{Prefix: netip.MustParsePrefix("2001:db8::/32")}, "2001:db8::/32"},
		{"[2001:db8::1]:443", Entry{Prefix: netip.MustParsePrefix("2001:db8::1/128"), Port: 443}, "[2001:db8::1]:443"},
		{"[2001:db8::/32]:443", Entry{Prefix: netip.MustParsePrefix("2001:db8::/32"), Port: 443}, "[2001:db8::/32]:443"},
		{"[::1]", Entry{Prefix: netip.MustParsePrefix("::1/128")}, "::1"},
		{"under_score.test", Entry{Host: "under_score.test"}, "under_score.test"},
	}
	for _, tt := range tests {
		got, err := ParseEntry(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("ParseEntry(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
			continue
		}
		if got.String() != tt.str {
			t.Errorf("ParseEntry(%q).String() = %q, want %q", tt.in, got.String(), tt.str)
		}
	}
	for _, bad := range []string{"", ":443", "host:", "host:0", "host:65536", "host:+1", "host:x", "*.", "*", "a..b",
		"-a.com", "a_b c", "[::1", "[::1]x", "[::1]:", "[host]:1", "fe80::1%eth0", "1.2.3.4/33", "a:b:c:d:e",
		"1.2.3", "1.2.3.4.5", "10.0.0.0/33", "[10.0.0.1]:80", "[2001:db8::1", "2001:db8::zz", "a b.com", "*.*.com"} {
		if e, err := ParseEntry(bad); err == nil {
			t.Errorf("ParseEntry(%q) = %+v, want an error", bad, e)
		}
	}
}

// TestParseEntryNameErrors: a bad host name is named once, with the rule it breaks.
func TestParseEntryNameErrors(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"exa mple.com", `"exa mple.com" is not a host name: ' ' is not a letter, a digit, '-' or '_'`},
		{"a..b", `"a..b" is not a host name: an empty label (two dots in a row, or a dot at the start)`},
		{"-a.com", `"-a.com" is not a host name: the label "-a" begins or ends with '-'`},
		{"*.b c.com", `"*.b c.com": "b c.com" is not a host name: ' ' is not a letter, a digit, '-' or '_'`},
		{"x" + strings.Repeat("y", 63) + ".com", `"x` + strings.Repeat("y", 63) + `.com" is not a host name: the label "x` + strings.Repeat("y", 63) + `" is longer than 63 bytes`},
	} {
		_, err := ParseEntry(tt.in)
		if err == nil || err.Error() != tt.want {
			t.Errorf("ParseEntry(%q): %v\nwant %s", tt.in, err, tt.want)
		}
	}
}
