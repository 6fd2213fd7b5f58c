package config

import (
	"errors"
	"testing"
)

func TestValidEgressEntry(t *testing.T) {
	valid := []string{
		"example.com", "example.com:443", "*.example.com", "*.example.com:8080", "localhost", "my_host.internal",
		"10.0.0.1", "10.0.0.1:22", "10.0.0.0/8", "10.0.0.0/8:443",
		"::1", "2001:db8::1", "2001:db8::/32", "[2001:db8::1]:443", "[::1]", "[2001:db8::/32]:53",
	}
	for _, s := range valid {
		if err := ValidEgressEntry(s); err != nil {
			t.Errorf("ValidEgressEntry(%q) = %v, want nil", s, err)
		}
	}
	invalid := []string{
		"", "*", "*.", "*example.com", "a.*.com", "ex ample.com", "-bad.com", "bad-.com", "a..b",
		"example.com:", "example.com:0", "example.com:65536", "example.com:http", "example.com:+80",
		":443", "1.2.3", "300.1.1.1", "10.0.0.0/33", "10.0.0.0/8/1", "2001:db8::1:443:x",
		"[10.0.0.1]:80", "[::1", "[::1]443", "[::1]:0", "fe80::1%eth0", "http://example.com", "example.com/path",
	}
	for _, s := range invalid {
		err := ValidEgressEntry(s)
		if err == nil {
			t.Errorf("ValidEgressEntry(%q) = nil, want an error", s)
		} else if !errors.Is(err, ErrInvalid) {
			t.Errorf("ValidEgressEntry(%q) = %v, not ErrInvalid", s, err)
		}
	}
}

// A URL is not an entry: the message shows the entry that works.
func TestValidEgressEntryURL(t *testing.T) {
	for s, want := range map[string]string{
		"https://example.com":         `"https://example.com": an egress entry is a host, not a URL (no scheme or path): write example.com or example.com:443`,
		"http://example.com:8080/x":   `"http://example.com:8080/x": an egress entry is a host, not a URL (no scheme or path): write example.com:8080`,
		"https://user@[2001:db8::1]/": `"https://user@[2001:db8::1]/": an egress entry is a host, not a URL (no scheme or path): write [2001:db8::1] or [2001:db8::1]:443`,
		"*":                           `a bare "*" is not an entry; a wildcard is written "*.domain"`,
	} {
		if err := ValidEgressEntry(s); err == nil || err.Error() != want {
			t.Errorf("ValidEgressEntry(%q) = %v, want %s", s, err, want)
		}
	}
}
