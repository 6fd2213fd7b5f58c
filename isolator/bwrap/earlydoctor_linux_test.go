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
		{"the variable, records kept", EarlySetting{Why: `DEVSANDBOX_EARLY_START="0"`, DefaultOn: true}, earlyFacts{load: 0.5, loadKnown: true, records: 3, recordsDir: "/h/.local/state/devsandbox/prestart"},
			isolator.Bypassed, `off: DEVSANDBOX_EARLY_START="0"; 3 launch records kept in /h/.local/state/devsandbox/prestart, unused while it is off`, ""},
		{"the key", EarlySetting{On: true, Why: "the default", KeyOff: "/h/.config/devsandbox/config.toml"}, idle, isolator.Bypassed,
			"off: sandbox.early_start = false (/h/.config/devsandbox/config.toml)", ""},
		{"the load", on, busy, isolator.Bypassed,
			`on (DEVSANDBOX_EARLY_START="1"), but nothing starts early now: the load average is 2.50 per CPU, 2 or more`, ""},
		{"always, loaded", always, busy, isolator.Active, "",
			`on (DEVSANDBOX_EARLY_START="always"): bwrap starts from the record of the same command line's last launch while the configuration loads, with or without a terminal (never the terminal itself: what devsandbox gives the command in its place)`},
		{"load unknown", on, earlyFacts{}, isolator.Active, "",
			`on (DEVSANDBOX_EARLY_START="1"): bwrap starts from the record of the same command line's last launch while the configuration loads, with or without a terminal (never the terminal itself: what devsandbox gives the command in its place)`},
		{"a bubblewrap the user may write", on, earlyFacts{load: 0.1, loadKnown: true, writableBwrap: "/h/.local/bin/bwrap", writableAt: "/h/.local/bin"}, isolator.Bypassed,
			`on (DEVSANDBOX_EARLY_START="1"), but nothing starts early here: PATH's bubblewrap /h/.local/bin/bwrap is where you can write (/h/.local/bin), so a sandbox could have put it there, and the early start would run it before any plan can judge it`, ""},
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
	// The fix for an off value: with the default on, unsetting the variable turns it
	// on as well as 1 does; with records kept, what removes them.
	for _, tc := range []struct {
		s   EarlySetting
		f   earlyFacts
		fix string
	}{
		{EarlySetting{Why: "the default"}, earlyFacts{}, "DEVSANDBOX_EARLY_START=1 turns it on"},
		{EarlySetting{Why: `DEVSANDBOX_EARLY_START="0"`}, earlyFacts{}, "DEVSANDBOX_EARLY_START=1 turns it on"},
		{EarlySetting{Why: `DEVSANDBOX_EARLY_START="0"`, DefaultOn: true}, earlyFacts{},
			"unset DEVSANDBOX_EARLY_START (it is on by default), or set it to 1, to turn it on"},
		{EarlySetting{Why: `DEVSANDBOX_EARLY_START="maybe" is not a value it takes`, DefaultOn: true}, earlyFacts{records: 1, recordsDir: "/d"},
			"unset DEVSANDBOX_EARLY_START (it is on by default), or set it to 1, to turn it on; `devsandbox sandboxes prune` removes the records no launch used within --days"},
	} {
		if r := earlyRow(tc.s, tc.f); r.Fix != tc.fix {
			t.Errorf("%+v, %+v: fix %q, want %q", tc.s, tc.f, r.Fix, tc.fix)
		}
	}
}
