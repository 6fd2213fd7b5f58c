package bwrap

import (
	"bytes"
	"fmt"
	"os"
	"time"

	"github.com/devsandbox/devsandbox/isolator"
)

// mountScanDropped is the first bubblewrap that remounts with mount_setattr() instead
// of reading /proc/self/mountinfo after each bind and remount
// (containers/bubblewrap#756).
var mountScanDropped = [3]int{0, 13, 0}

// mountScansPerLaunch is how many times bubblewrap before 0.13 reads the mount table
// during a devsandbox launch. It is taken from a measurement, not derived from a
// plan: on 2026-12-04 a default devsandbox launch (bubblewrap 0.8.0) made about 19
// such reads, plain bwrap about 7. Each read covers the whole host table (the host's
// mounts stay listed under /oldroot during setup).
const mountScansPerLaunch = 19

// mountScansWithAgents is the same count in a home with several agents and their
// tools (claude, codex, gemini, copilot, gh, git, go, node, cargo, mise, …): each of
// their binds is one more read; 64 were counted on 2026-12-04.
const mountScansWithAgents = 64

// mountTableRow is doctor's row on the host's mount table for the bwrap that says
// version: lines mounts, one read of the table taking read here. It is advice, never
// a warning or a failure: the launch works, only slower on a host with many mounts.
func mountTableRow(version string, lines int, read time.Duration, err error) isolator.Check {
	row := isolator.Check{Name: "host mount table (launch cost)", Status: isolator.Status{State: isolator.Active}}
	if err != nil {
		row.Detail = "cannot read /proc/self/mountinfo: " + errText(err)
		return row
	}
	got, ok := parseVersion(version)
	which := "an unknown bubblewrap version"
	if ok {
		which = fmt.Sprintf("bubblewrap %d.%d.%d", got[0], got[1], got[2])
	}
	if ok && !versionLess(got, mountScanDropped) {
		row.Detail = fmt.Sprintf("%d mounts; %s does not read the mount table after each mount, so its size does not slow launches", lines, which)
		return row
	}
	row.Detail = fmt.Sprintf("%d mounts; one read of /proc/self/mountinfo takes %.2f ms here and %s reads it after each of its mounts "+
		"(about %d per launch with no tools, about %d with several agents and their tools): about %.1f to %.1f ms per launch. "+
		"To cut it: bubblewrap 0.13 or later (it does not read the table), or fewer host mounts",
		lines, millis(read), which, mountScansPerLaunch, mountScansWithAgents,
		millis(read*mountScansPerLaunch), millis(read*mountScansWithAgents))
	return row
}

func millis(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// readMountTable reads /proc/self/mountinfo a few times and returns its line count and
// the fastest read.
func readMountTable() (lines int, read time.Duration, err error) {
	for i := 0; i < 5; i++ {
		start := time.Now()
		data, err := os.ReadFile("/proc/self/mountinfo")
		d := time.Since(start)
		if err != nil {
			return 0, 0, err
		}
		if i == 0 || d < read {
			read = d
		}
		lines = bytes.Count(data, []byte("\n"))
	}
	return lines, read, nil
}
