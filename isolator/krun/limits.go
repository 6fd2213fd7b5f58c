package krun

import (
	"fmt"
	"strconv"
	"strings"
)

// hardNofile is the hard "Max open files" of a /proc/PID/limits text (0: unlimited).
func hardNofile(limits string) (uint64, error) {
	for _, l := range strings.Split(limits, "\n") {
		rest, ok := strings.CutPrefix(l, "Max open files")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) < 2 {
			break
		}
		if f[1] == "unlimited" {
			return 0, nil
		}
		return strconv.ParseUint(f[1], 10, 64)
	}
	return 0, fmt.Errorf("no open-file limit in %q", limits)
}

// nofileShort reports whether a service whose hard RLIMIT_NOFILE is have (0:
// unlimited) cannot give a container the limit want (the spec's, the run's own hard
// limit; 0: unlimited, and the spec then sets none): runc, started by the service,
// cannot raise a hard limit above its own.
func nofileShort(have, want uint64) bool {
	return have != 0 && want != 0 && have < want
}
