package config

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
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

func TestLoopbackEntry(t *testing.T) {
	for entry, want := range map[string]string{
		"0.0.0.0": "an unspecified address", "0.0.0.0:443": "an unspecified address", "0.1.2.3": "an unspecified address",
		"::": "an unspecified address", "[::]:80": "an unspecified address", "::ffff:0.0.0.0": "an unspecified address",
		"127.0.0.1": "a loopback address", "127.0.0.1:8080": "a loopback address", "127.0.0.0/8": "a loopback address",
		"127.1.2.0/24:22": "a loopback address", "::1": "a loopback address", "[::1]:3000": "a loopback address",
		"::ffff:127.0.0.1": "a loopback address", "::ffff:127.0.0.0/104": "a loopback address",
		"localhost": "a name for the local host", "LocalHost.:80": "a name for the local host",
		"db.localhost": "a name for the local host", "*.localhost": "a name for the local host",
		// IPv6 forms that embed a loopback or unspecified IPv4 address: the proxy refuses
		// them as its own host (addrclass.Classify), so the entry opens nothing either.
		"::127.0.0.1": "a loopback address", "[::127.0.0.1]:80": "a loopback address", "::127.0.0.0/104": "a loopback address",
		"::2": "an unspecified address", "::/104": "an unspecified address", // ::0.0.0.2, and :: and ::1 with them
		"::ffff:0:127.0.0.1": "a loopback address", "::ffff:0:127.0.0.0/104": "a loopback address",
		"2002:7f00:1::": "a loopback address", "[2002:7f00:1::1]:443": "a loopback address", "2002:7f00::/24": "a loopback address",
		"2002::1":                     "an unspecified address",
		"2001:0:5db8:d822::80ff:fffe": "a loopback address", "2001::8000:0/104": "a loopback address", // Teredo client 127.0.0.1, 127/8
		"2001:0:7f00:1::a2ff:fefe": "a loopback address", // Teredo server 127.0.0.1, client public
		"64:ff9b::127.0.0.1":       "a loopback address", "64:ff9b::7f00:0/104": "a loopback address",
		"fe80::5efe:127.0.0.1": "a loopback address", "fe80::200:5efe:7f00:0/104": "a loopback address", // ISATAP, link-local
		"64:ff9b:1::7f00:1": "a loopback address", "64:ff9b:1:7f00:1::": "a loopback address", "64:ff9b:1:7f00::/56": "a loopback address",
		// not only loopback: the proxy refuses the loopback part whatever the entry
		"0.0.0.0/0": "", "::/0": "", "96.0.0.0/3": "", "::/96": "", "2002::/16": "", "2002:7e00::/23": "",
		"2001::/32": "", "2001:0:7f00::/40": "", "64:ff9b:1::/48": "", "64:ff9b::/96": "",
		"10.0.0.1": "", "example.com": "", "localhost.example.com": "", "128.0.0.1": "", "::10.1.2.3": "",
		"2a00:1450::5efe:127.0.0.1": "", "2002:c0a8:101::1": "", "2002:5db8:d822::1": "", "2001:0:5db8:d822::a247:27dd": "", "64:ff9b:1::a00:1": "",
	} {
		if got := loopbackEntry(entry); got != want {
			t.Errorf("loopbackEntry(%q) = %q, want %q", entry, got, want)
		}
	}
}

// TestLoopbackAllowOverride: an allow entry of loopback or unspecified addresses is an
// error naming where it came from and the override; with the override in the same or
// a lower layer it is dropped with a warning, and the other entries stay.
func TestLoopbackAllowOverride(t *testing.T) {
	home, environ := testHome(t)
	_, _, err := Load(LoadOptions{Environ: environ, Flags: Flags{Allow: []string{"a.com", "0.0.0.0"}}, UID: 1000, GID: 1000})
	var ce *Error
	if !errors.As(err, &ce) || !errors.Is(err, ErrInvalid) || ce.Source != "flag --allow" || !strings.Contains(err.Error(), `egress.loopback_entries = "ignore"`) {
		t.Fatalf("--allow 0.0.0.0: %v", err)
	}
	writeFile(t, filepath.Join(home, ".config/devsandbox/config.toml"), "[egress]\nloopback_entries = \"ignore\"\nallow = [\"localhost:3000\"]\n")
	c, warnings := mustLoad(t, LoadOptions{Environ: environ, Flags: Flags{Allow: []string{"a.com", "127.0.0.1", "[::]:80"}}})
	if want := []string{"a.com"}; !slices.Equal(c.Egress.Allow, want) {
		t.Errorf("egress.allow = %q, want %q", c.Egress.Allow, want)
	}
	if len(warnings) != 3 || !strings.Contains(warnings[0], `ignoring egress.allow entry "localhost:3000"`) {
		t.Errorf("warnings %q", warnings)
	}
}
