package config

import (
	"path/filepath"
	"strings"
)

// EarlyStartVar sets bwrap's early start: "1" (also "on", "true", "yes") turns it
// on unless the machine is loaded, "always" whatever the load (tests,
// measurements), "0" (also "off", "false", "no") turns it off: no early start, no
// launch record read or written. Unset or empty: the default (EarlyDefault). Any
// other value turns it off too, and says so (EarlyStartSetting.Why and Unknown: a
// warning on every launch, --debug, doctor): a value devsandbox does not know never
// turns on what was not asked for.
const EarlyStartVar = "DEVSANDBOX_EARLY_START"

// EarlyStartMode is what EarlyStartVar asks for.
type EarlyStartMode int

const (
	EarlyOff    EarlyStartMode = iota
	EarlyOn                    // unless the machine is loaded
	EarlyAlways                // whatever the load
)

// EarlyDefault is the early start's mode when EarlyStartVar is unset or empty: on,
// unless the machine is loaded (terminals are never started early).
const EarlyDefault = EarlyOn

// EarlyStartSetting is what EarlyStart read.
type EarlyStartSetting struct {
	// StateRoot is devsandbox's state root ($XDG_STATE_HOME/devsandbox, or
	// ~/.local/state/devsandbox), where the launch records and the projects' session
	// /tmp directories are; "" when HOME is not absolute (the configuration will
	// refuse that launch itself).
	StateRoot string
	Mode      EarlyStartMode
	// Why says where Mode comes from, for --debug and doctor: "the default", or the
	// variable and its value (quoted; an unknown value named as such).
	Why string
	// Unknown: EarlyStartVar holds a value it does not take (Mode is EarlyOff).
	Unknown bool
}

// EarlyStart reads, from environ, what bwrap's early start needs before the
// configuration is loaded: whether it is asked for (EarlyStartVar) and the state
// root. sandbox.early_start, read later with the configuration, can only turn it
// off (the launch then abandons a start already made).
func EarlyStart(environ []string) EarlyStartSetting {
	var home, state string
	s := EarlyStartSetting{Mode: EarlyDefault, Why: "the default"}
	seen := map[string]bool{}
	for _, kv := range environ {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || seen[name] { // the first entry wins, as in HostFromEnviron
			continue
		}
		seen[name] = true
		switch name {
		case "HOME":
			home = value
		case "XDG_STATE_HOME":
			state = value
		case EarlyStartVar:
			if value != "" {
				s.Mode, s.Why, s.Unknown = earlyMode(value)
			}
		}
	}
	if filepath.IsAbs(home) {
		s.StateRoot = filepath.Join(xdgDir(state, filepath.Clean(home), ".local/state"), "devsandbox")
	}
	return s
}

// earlyMode is the mode a non-empty EarlyStartVar value asks for, why, and whether
// the value is one it does not take.
func earlyMode(value string) (EarlyStartMode, string, bool) {
	why := EarlyStartVar + "=" + quoteShort(value)
	switch strings.ToLower(value) {
	case "1", "on", "true", "yes":
		return EarlyOn, why, false
	case "always":
		return EarlyAlways, why, false
	case "0", "off", "false", "no":
		return EarlyOff, why, false
	}
	return EarlyOff, why + " is not a value it takes (1, on, true, yes, always; 0, off, false, no)", true
}

// quoteShort quotes v for a message, at most 32 bytes of it.
func quoteShort(v string) string {
	if len(v) > 32 {
		return quote(v[:32]) + "…"
	}
	return quote(v)
}
