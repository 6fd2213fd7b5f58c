package krun

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	spec "github.com/opencontainers/runtime-spec/specs-go"
)

// rlimitInfo is what the backend knows of one resource limit: its row in
// /proc/PID/limits, what it counts (for messages) and the shell's `ulimit` option.
type rlimitInfo struct {
	row, what, ulimit string
}

// rlimitInfos are the resource limits by their name in a spec ("nofile"; specgen
// names them so, the OCI spec RLIMIT_NOFILE): every one a container's spec can ask.
var rlimitInfos = map[string]rlimitInfo{
	"as":         {"Max address space", "bytes of address space", "-v"},
	"core":       {"Max core file size", "bytes of core file", "-c"},
	"cpu":        {"Max cpu time", "seconds of CPU time", "-t"},
	"data":       {"Max data size", "bytes of data segment", "-d"},
	"fsize":      {"Max file size", "bytes of file size", "-f"},
	"locks":      {"Max file locks", "file locks", "-x"},
	"memlock":    {"Max locked memory", "bytes of locked memory", "-l"},
	"msgqueue":   {"Max msgqueue size", "bytes of message queues", "-q"},
	"nice":       {"Max nice priority", "nice priority", "-e"},
	"nofile":     {"Max open files", "open files", "-n"},
	"nproc":      {"Max processes", "processes", "-u"},
	"rss":        {"Max resident set", "bytes of resident set", "-m"},
	"rtprio":     {"Max realtime priority", "realtime priority", "-r"},
	"rttime":     {"Max realtime timeout", "microseconds of realtime CPU time", "-R"},
	"sigpending": {"Max pending signals", "pending signals", "-i"},
	"stack":      {"Max stack size", "bytes of stack", "-s"},
}

// rlimitName is the spec name of an rlimit type: "nofile" for "nofile" and
// "RLIMIT_NOFILE".
func rlimitName(typ string) string {
	return strings.ToLower(strings.TrimPrefix(strings.ToUpper(typ), "RLIMIT_"))
}

// unlimited is RLIM_INFINITY, an unlimited rlimit in a spec.
const unlimited = ^uint64(0)

// limitRows are the soft and hard limits of a /proc/PID/limits text by spec name
// (unlimited: RLIM_INFINITY); an error when it has no open-file row, which every
// kernel writes.
func limitRows(text string) (map[string][2]uint64, error) {
	byRow := map[string]string{}
	for name, info := range rlimitInfos {
		byRow[info.row] = name
	}
	rows := map[string][2]uint64{}
	for _, l := range strings.Split(text, "\n") {
		// The row names are padded to 26 columns, then soft, hard and units.
		if len(l) < 26 {
			continue
		}
		name, ok := byRow[strings.TrimSpace(l[:26])]
		if !ok {
			continue
		}
		f := strings.Fields(l[26:])
		if len(f) < 2 {
			return nil, fmt.Errorf("unexpected %q", l)
		}
		var v [2]uint64
		for i := range v {
			if f[i] == "unlimited" {
				v[i] = unlimited
				continue
			}
			n, err := strconv.ParseUint(f[i], 10, 64)
			if err != nil {
				return nil, fmt.Errorf("unexpected %q: %w", l, err)
			}
			v[i] = n
		}
		rows[name] = v
	}
	if _, ok := rows["nofile"]; !ok {
		return nil, fmt.Errorf("no open-file limit in %q", text)
	}
	return rows, nil
}

// hardLimits are the hard limits of a /proc/PID/limits text by spec name (0:
// unlimited); an error when it has no open-file row, which every kernel writes.
func hardLimits(text string) (map[string]uint64, error) {
	rows, err := limitRows(text)
	if err != nil {
		return nil, err
	}
	have := map[string]uint64{}
	for name, v := range rows {
		if v[1] == unlimited {
			v[1] = 0
		}
		have[name] = v[1]
	}
	return have, nil
}

// ownLimits are the limits of a /proc/PID/limits text (the service's) as spec
// rlimits, by name: what a container is given of every limit its spec does not set
// (Options.Inherited).
func ownLimits(text string) ([]spec.POSIXRlimit, error) {
	rows, err := limitRows(text)
	if err != nil {
		return nil, err
	}
	var out []spec.POSIXRlimit
	for name, v := range rows {
		out = append(out, spec.POSIXRlimit{Type: name, Soft: v[0], Hard: v[1]})
	}
	slices.SortFunc(out, func(a, b spec.POSIXRlimit) int { return strings.Compare(a.Type, b.Type) })
	return out, nil
}

// shortLimit is one rlimit a service cannot give a container: the spec asks Want
// (hard), the service's own hard limit is Have.
type shortLimit struct {
	Name       string // spec name: "nproc"
	Have, Want uint64
}

// String is the limit for people: "1000 processes (its hard RLIMIT_NPROC), below
// this run's 4096".
func (s shortLimit) String() string {
	what := s.Name
	if info, ok := rlimitInfos[s.Name]; ok {
		what = info.what
	}
	return fmt.Sprintf("%d %s (its hard RLIMIT_%s), below this run's %d", s.Have, what, strings.ToUpper(s.Name), s.Want)
}

// shortLimits are the rlimits of want (a container's spec's) that a service whose
// hard limits are have (hardLimits) cannot give: runc, which the service starts,
// cannot raise a hard limit above its own (setrlimit needs CAP_SYS_RESOURCE of the
// host), and fails with "error setting rlimit type N: operation not permitted". An
// unlimited service (0) gives anything; a limit /proc does not show is not taken for
// a short one.
func shortLimits(have map[string]uint64, want []spec.POSIXRlimit) []shortLimit {
	var short []shortLimit
	for _, w := range want {
		name := rlimitName(w.Type)
		h, ok := have[name]
		if ok && h != 0 && h < w.Hard {
			short = append(short, shortLimit{Name: name, Have: h, Want: w.Hard})
		}
	}
	return short
}

// wantedLimits are the rlimits a container of a run with limits.pids pids asks of
// the service: the spec's (rlimits, with the host's hard limits in opts).
func wantedLimits(opts Options, pids int) []spec.POSIXRlimit {
	return rlimits(opts, nproc(pids, opts.NprocHard))
}

// limitsText is the service's limits of want for doctor: "nofile 20000 (a container
// is given 20000), nproc 96555 (…4096)".
func limitsText(have map[string]uint64, want []spec.POSIXRlimit) string {
	var parts []string
	for _, w := range want {
		name := rlimitName(w.Type)
		h, ok := have[name]
		v := "unknown"
		switch {
		case ok && h == 0:
			v = "unlimited"
		case ok:
			v = strconv.FormatUint(h, 10)
		}
		parts = append(parts, fmt.Sprintf("%s %s (a container is given %d)", name, v, w.Hard))
	}
	if len(parts) == 0 {
		return "no rlimit asked"
	}
	return strings.Join(parts, ", ")
}
