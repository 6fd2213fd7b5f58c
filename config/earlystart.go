package config

import (
	"path/filepath"
	"strings"
)

// EarlyStartVar turns bwrap's early start on (experimental, off by default): "1",
// or "always" to start early whatever the machine's load (tests, measurements).
const EarlyStartVar = "DEVSANDBOX_EARLY_START"

// EarlyStartMode is what EarlyStartVar asks for.
type EarlyStartMode int

const (
	EarlyOff    EarlyStartMode = iota
	EarlyOn                    // unless the machine is loaded
	EarlyAlways                // whatever the load
)

// EarlyStart reads, from environ, what bwrap's early start needs before the
// configuration is loaded: whether it is asked for (EarlyStartVar), and devsandbox's
// state root ($XDG_STATE_HOME/devsandbox, or ~/.local/state/devsandbox), where the
// launch records and the projects' session /tmp directories are. "" when HOME is not
// absolute (the configuration will refuse that launch itself).
func EarlyStart(environ []string) (stateRoot string, mode EarlyStartMode) {
	var home, state string
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
			switch value {
			case "1":
				mode = EarlyOn
			case "always":
				mode = EarlyAlways
			}
		}
	}
	if !filepath.IsAbs(home) {
		return "", mode
	}
	return filepath.Join(xdgDir(state, filepath.Clean(home), ".local/state"), "devsandbox"), mode
}
