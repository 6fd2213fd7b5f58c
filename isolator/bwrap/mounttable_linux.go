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
// during a devsandbox launch in a home with no tools, and mountScansWithAgents in a
// home with several agents and their tools (claude, codex, gemini, copilot, gh, git,
// go, node, cargo, mise, …), as counted (strace, bwrap's own opens of mountinfo) on
// 2026-12-04 at 71364e9; an earlier count of 19 took in a read outside bwrap. The row
// gives this range only where it has no Plan to count from (mountTableReads): outside
// a project, or where the Plan does not build.
const (
	mountScansPerLaunch  = 18
	mountScansWithAgents = 64
)

// mountTableRow is doctor's row on the host's mount table for the bwrap that says
// version: lines mounts, one read of the table taking read here; planned is how many
// reads a launch from here makes (mountTableReads of its argv), 0 when unknown
// (outside a project, or where its Plan does not build or render): the row then
// gives the range of mountScansPerLaunch to mountScansWithAgents. The time is a lower
// bound: it prices a read as the kernel's, and bwrap parses each one too (at 528 lines
// a read cost bwrap 1.0-1.3 ms against a bare read's 0.57-0.97). It is advice, never
// a warning or a failure: the launch works, only slower on a host with many mounts.
func mountTableRow(version string, lines int, read time.Duration, err error, planned int) isolator.Check {
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
	const cut = ". To cut it: bubblewrap 0.13 or later (it does not read the table), or fewer host mounts"
	if planned > 0 {
		row.Detail = fmt.Sprintf("%d mounts; one read of /proc/self/mountinfo takes %.2f ms here and %s reads it after each of its mounts "+
			"(%d reads per launch here: at least %.1f ms, for this project's view and tools; bwrap also parses what it reads)"+cut,
			lines, millis(read), which, planned, millis(read*time.Duration(planned)))
		return row
	}
	row.Detail = fmt.Sprintf("%d mounts; one read of /proc/self/mountinfo takes %.2f ms here and %s reads it after each of its mounts "+
		"(about %d per launch with no tools, about %d with several agents and their tools): at least %.1f to %.1f ms per launch; bwrap also parses what it reads"+cut,
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

// launchReads is how many times bubblewrap before 0.13 reads the mount table
// launching b.Planned here: mountTableReads of the argv Render gives it (what
// --dry-run prints), for this process's user and terminal. 0 without a Plan, or when
// it does not render (the launch would then stop before bwrap).
func (b *Isolator) launchReads() int {
	if b.Planned == nil {
		return 0
	}
	r, err := b.Render(b.Planned)
	if err != nil {
		return 0
	}
	spec, ok := r.(*Spec)
	if !ok {
		return 0
	}
	return mountTableReads(spec.Argv, readHost{exists: statExists, tty: b.Planned.TTY, root: os.Geteuid() == 0})
}

// statExists reports whether path exists, following links (bwrap's stat of a -try
// source).
func statExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
