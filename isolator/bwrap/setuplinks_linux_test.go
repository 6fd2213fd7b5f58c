package bwrap

import (
	"strings"
	"testing"

	"github.com/devsandbox/devsandbox/isolator"
)

func TestParseVersion(t *testing.T) {
	for v, want := range map[string]struct {
		got [3]int
		ok  bool
	}{
		"bubblewrap 0.8.0":     {[3]int{0, 8, 0}, true},
		"bubblewrap 0.11.1":    {[3]int{0, 11, 1}, true},
		"bubblewrap 0.12":      {[3]int{0, 12, 0}, true},
		"0.13.0":               {[3]int{0, 13, 0}, true},
		"bubblewrap 0.10.0-rc": {[3]int{0, 10, 0}, true},
		"bubblewrap 1":         {[3]int{1, 0, 0}, false},
		"bubblewrap":           {},
		"":                     {},
	} {
		got, ok := parseVersion(v)
		if ok != want.ok || (ok && got != want.got) {
			t.Errorf("parseVersion(%q) = %v, %v; want %v, %v", v, got, ok, want.got, want.ok)
		}
	}
}

// Before 0.12 doctor warns (never fails), naming the CVE, what devsandbox checks,
// what remains and the fix; from 0.12 the row is active.
func TestSetupLinksRow(t *testing.T) {
	for _, tt := range []struct {
		version string
		state   isolator.State
		says    string // the start of Reason, else Detail
	}{
		{"bubblewrap 0.8.0", isolator.Warning, "bubblewrap 0.8.0 follows symlinks"},
		{"bubblewrap 0.9.0", isolator.Warning, "bubblewrap 0.9.0 follows symlinks"},
		{"bubblewrap 0.11.99", isolator.Warning, "bubblewrap 0.11.99 follows symlinks"},
		{"", isolator.Warning, "an unknown bubblewrap version follows symlinks"},
		{"bubblewrap 0.12.0", isolator.Active, "bubblewrap 0.12.0 creates mount points without following links"},
		{"bubblewrap 0.13.1", isolator.Active, "bubblewrap 0.13.1 creates mount points without following links"},
	} {
		r := setupLinksRow(tt.version)
		if r.Name != "bwrap mount points (CVE-2026-87766)" || r.State != tt.state {
			t.Errorf("%q: got %q %v, want %v", tt.version, r.Name, r.State, tt.state)
		}
		text := r.Detail
		if r.State == isolator.Warning {
			text = r.Reason
			for _, want := range []string{"refuses to launch when a mount destination is reached through a symlink", "not covered: a session running at the same time"} {
				if !strings.Contains(r.Reason, want) {
					t.Errorf("%q: the reason does not say %q: %s", tt.version, want, r.Reason)
				}
			}
			if !strings.HasPrefix(r.Fix, "install bubblewrap 0.12 or later") {
				t.Errorf("%q: fix %q", tt.version, r.Fix)
			}
		}
		if !strings.HasPrefix(text, tt.says) {
			t.Errorf("%q: got %q, want it to start %q", tt.version, text, tt.says)
		}
	}
}
