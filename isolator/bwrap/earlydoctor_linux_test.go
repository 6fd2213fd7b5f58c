package bwrap

import (
	"testing"

	"github.com/devsandbox/devsandbox/isolator"
)

func TestEarlyRow(t *testing.T) {
	on := EarlySetting{On: true, Why: `DEVSANDBOX_EARLY_START="1"`}
	always := EarlySetting{On: true, Always: true, Why: `DEVSANDBOX_EARLY_START="always"`}
	idle := earlyFacts{load: 0.5, loadKnown: true}
	busy := earlyFacts{load: 2.5, loadKnown: true}
	for _, tc := range []struct {
		name   string
		s      EarlySetting
		f      earlyFacts
		state  isolator.State
		reason string
		detail string
	}{
		{"the default", EarlySetting{Why: "the default"}, idle, isolator.Bypassed, "off: the default", ""},
		{"the variable", EarlySetting{Why: `DEVSANDBOX_EARLY_START="0"`}, idle, isolator.Bypassed, `off: DEVSANDBOX_EARLY_START="0"`, ""},
		{"the key", EarlySetting{On: true, Why: "the default", KeyOff: "/h/.config/devsandbox/config.toml"}, idle, isolator.Bypassed,
			"off: sandbox.early_start = false (/h/.config/devsandbox/config.toml)", ""},
		{"the load", on, busy, isolator.Bypassed,
			`on (DEVSANDBOX_EARLY_START="1"), but nothing starts early now: the load average is 2.50 per CPU, 2 or more`, ""},
		{"always, loaded", always, busy, isolator.Active, "",
			`on (DEVSANDBOX_EARLY_START="always"): bwrap starts from the record of the same command line's last launch while the configuration loads, with or without a terminal (never the terminal itself: what devsandbox gives the command in its place)`},
		{"load unknown", on, earlyFacts{}, isolator.Active, "",
			`on (DEVSANDBOX_EARLY_START="1"): bwrap starts from the record of the same command line's last launch while the configuration loads, with or without a terminal (never the terminal itself: what devsandbox gives the command in its place)`},
		{"another session's terminal on stdin", on, earlyFacts{load: 0.1, loadKnown: true, terminal: true}, isolator.Active, "",
			`on (DEVSANDBOX_EARLY_START="1"): bwrap starts from the record of the same command line's last launch while the configuration loads; not for a launch whose stdin is a terminal other than this session's controlling terminal and whose stdout is not a terminal, as here`},
	} {
		r := earlyRow(tc.s, tc.f)
		if r.Name != earlyRowName || r.State != tc.state || r.Reason != tc.reason || r.Detail != tc.detail {
			t.Errorf("%s: %+v; want %v, reason %q, detail %q", tc.name, r, tc.state, tc.reason, tc.detail)
		}
		if r.State != isolator.Active && r.Fix == "" {
			t.Errorf("%s: no fix", tc.name)
		}
	}
}
