package config

import "testing"

func TestEarlyStart(t *testing.T) {
	for _, tc := range []struct {
		env   []string
		state string
		on    EarlyStartMode
	}{
		{[]string{"HOME=/home/u"}, "/home/u/.local/state/devsandbox", EarlyOff},
		{[]string{"HOME=/home/u", "DEVSANDBOX_EARLY_START=1"}, "/home/u/.local/state/devsandbox", EarlyOn},
		{[]string{"HOME=/home/u", "DEVSANDBOX_EARLY_START=yes"}, "/home/u/.local/state/devsandbox", EarlyOff},
		{[]string{"HOME=/home/u", "XDG_STATE_HOME=/s/", "XDG_STATE_HOME=/t"}, "/s/devsandbox", EarlyOff},
		{[]string{"HOME=/home/u", "XDG_STATE_HOME=rel"}, "/home/u/.local/state/devsandbox", EarlyOff},
		{[]string{"HOME=rel", "DEVSANDBOX_EARLY_START=1"}, "", EarlyOn},
		{[]string{"HOME=/h", "DEVSANDBOX_EARLY_START=always"}, "/h/.local/state/devsandbox", EarlyAlways},
	} {
		state, on := EarlyStart(tc.env)
		if state != tc.state || on != tc.on {
			t.Errorf("EarlyStart(%q) = %q, %d; want %q, %d", tc.env, state, on, tc.state, tc.on)
		}
		// The same root as the Plan's state directories.
		if h, err := newHost(tc.env, 1000, 1000, func() ([]byte, error) { return nil, nil }); err == nil && state != h.StateHome+"/devsandbox" {
			t.Errorf("EarlyStart(%q) = %q, the host's state home %q", tc.env, state, h.StateHome)
		}
	}
}
