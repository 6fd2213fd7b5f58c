package config

import (
	"strings"
	"testing"
)

func TestEarlyStart(t *testing.T) {
	const unknown = " is not a value it takes (1, on, true, yes, always; 0, off, false, no)"
	for _, tc := range []struct {
		env   []string
		state string
		on    EarlyStartMode
		why   string
	}{
		{[]string{"HOME=/home/u"}, "/home/u/.local/state/devsandbox", EarlyDefault, "the default"},
		{[]string{"HOME=/home/u", "DEVSANDBOX_EARLY_START="}, "/home/u/.local/state/devsandbox", EarlyDefault, "the default"},
		{[]string{"HOME=/home/u", "DEVSANDBOX_EARLY_START=1"}, "/home/u/.local/state/devsandbox", EarlyOn, `DEVSANDBOX_EARLY_START="1"`},
		{[]string{"HOME=/home/u", "DEVSANDBOX_EARLY_START=On"}, "/home/u/.local/state/devsandbox", EarlyOn, `DEVSANDBOX_EARLY_START="On"`},
		{[]string{"HOME=/home/u", "DEVSANDBOX_EARLY_START=true"}, "/home/u/.local/state/devsandbox", EarlyOn, `DEVSANDBOX_EARLY_START="true"`},
		{[]string{"HOME=/home/u", "DEVSANDBOX_EARLY_START=yes"}, "/home/u/.local/state/devsandbox", EarlyOn, `DEVSANDBOX_EARLY_START="yes"`},
		{[]string{"HOME=/home/u", "DEVSANDBOX_EARLY_START=0"}, "/home/u/.local/state/devsandbox", EarlyOff, `DEVSANDBOX_EARLY_START="0"`},
		{[]string{"HOME=/home/u", "DEVSANDBOX_EARLY_START=off"}, "/home/u/.local/state/devsandbox", EarlyOff, `DEVSANDBOX_EARLY_START="off"`},
		{[]string{"HOME=/home/u", "DEVSANDBOX_EARLY_START=FALSE"}, "/home/u/.local/state/devsandbox", EarlyOff, `DEVSANDBOX_EARLY_START="FALSE"`},
		{[]string{"HOME=/home/u", "DEVSANDBOX_EARLY_START=no"}, "/home/u/.local/state/devsandbox", EarlyOff, `DEVSANDBOX_EARLY_START="no"`},
		// A value it does not take is off, and named.
		{[]string{"HOME=/home/u", "DEVSANDBOX_EARLY_START=2"}, "/home/u/.local/state/devsandbox", EarlyOff, `DEVSANDBOX_EARLY_START="2"` + unknown},
		{[]string{"HOME=/home/u", "DEVSANDBOX_EARLY_START= 1"}, "/home/u/.local/state/devsandbox", EarlyOff, `DEVSANDBOX_EARLY_START=" 1"` + unknown},
		{[]string{"HOME=/home/u", "DEVSANDBOX_EARLY_START=" + strings.Repeat("x", 40)}, "/home/u/.local/state/devsandbox", EarlyOff,
			`DEVSANDBOX_EARLY_START="` + strings.Repeat("x", 32) + `"…` + unknown},
		{[]string{"HOME=/home/u", "DEVSANDBOX_EARLY_START=a\x1b]52;c;x\a"}, "/home/u/.local/state/devsandbox", EarlyOff, `DEVSANDBOX_EARLY_START="a\u001B]52;c;x\u0007"` + unknown},
		// The first entry wins.
		{[]string{"HOME=/home/u", "DEVSANDBOX_EARLY_START=0", "DEVSANDBOX_EARLY_START=1"}, "/home/u/.local/state/devsandbox", EarlyOff, `DEVSANDBOX_EARLY_START="0"`},
		{[]string{"HOME=/home/u", "XDG_STATE_HOME=/s/", "XDG_STATE_HOME=/t"}, "/s/devsandbox", EarlyDefault, "the default"},
		{[]string{"HOME=/home/u", "XDG_STATE_HOME=rel"}, "/home/u/.local/state/devsandbox", EarlyDefault, "the default"},
		{[]string{"HOME=rel", "DEVSANDBOX_EARLY_START=1"}, "", EarlyOn, `DEVSANDBOX_EARLY_START="1"`},
		{[]string{"HOME=/h", "DEVSANDBOX_EARLY_START=always"}, "/h/.local/state/devsandbox", EarlyAlways, `DEVSANDBOX_EARLY_START="always"`},
	} {
		s := EarlyStart(tc.env)
		if s.StateRoot != tc.state || s.Mode != tc.on || s.Why != tc.why || s.Unknown != strings.HasSuffix(tc.why, unknown) {
			t.Errorf("EarlyStart(%q) = %q, %d, %q, unknown %v; want %q, %d, %q", tc.env, s.StateRoot, s.Mode, s.Why, s.Unknown, tc.state, tc.on, tc.why)
		}
		// The same root as the Plan's state directories.
		if h, err := newHost(tc.env, 1000, 1000, func() ([]byte, error) { return nil, nil }); err == nil && s.StateRoot != h.StateHome+"/devsandbox" {
			t.Errorf("EarlyStart(%q) = %q, the host's state home %q", tc.env, s.StateRoot, h.StateHome)
		}
	}
}
