package bwrap

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"slices"
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
// gives the range of mountScansPerLaunch to mountScansWithAgents. perMount is what
// one more mount cost bwrap here (mountCost), 0 when not measured: a read is priced at
// it when it is more than the bare read, else at the bare read, a lower bound (bwrap
// parses each read too: at 528 lines a read cost bwrap 1.0-1.3 ms against a bare
// read's 0.57-0.97). It is advice, never a warning or a failure: the launch works,
// only slower on a host with many mounts.
func mountTableRow(version string, lines int, read time.Duration, err error, planned int, perMount time.Duration) isolator.Check {
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
	if !readsTable(version) {
		row.Detail = fmt.Sprintf("%d mounts; %s does not read the mount table after each mount, so its size does not slow launches", lines, which)
		return row
	}
	const cut = ". To cut it: bubblewrap 0.13 or later (it does not read the table), or fewer host mounts"
	// A measured mount prices a read with bwrap's parsing and the mount itself; the
	// kernel's read alone is a lower bound.
	price, est := read, "at least"
	head := fmt.Sprintf("%d mounts; one read of /proc/self/mountinfo takes %.2f ms here and %s reads it after each of its mounts", lines, millis(read), which)
	tail := "bwrap also parses what it reads"
	if perMount > read {
		price, est = perMount, "about"
		tail = fmt.Sprintf("each of bwrap's mounts, its read included, took %.2f ms here (measured)", millis(perMount))
	}
	if planned > 0 {
		row.Detail = fmt.Sprintf("%s (%d reads per launch here: %s %.1f ms, for this project's view and tools; %s)"+cut,
			head, planned, est, millis(price*time.Duration(planned)), tail)
		return row
	}
	row.Detail = fmt.Sprintf("%s (about %d per launch with no tools, about %d with several agents and their tools): %s %.1f to %.1f ms per launch; %s"+cut,
		head, mountScansPerLaunch, mountScansWithAgents, est,
		millis(price*mountScansPerLaunch), millis(price*mountScansWithAgents), tail)
	return row
}

// costBinds and costRounds size mountCost's measurement: the extra binds of one
// launch, and the launches of each kind.
const (
	costBinds  = 16
	costRounds = 5
)

// mountCost measures what one more mount costs bin (a bubblewrap before 0.13) on
// this host: plain launches of /usr/bin/true with and without costBinds more
// read-only binds, alternating, the difference of their medians per bind. That is
// the bind, bwrap's read and parse of the mount table after it, and the namespace's
// share: what each of a launch's reads costs it. ok is false when a launch failed
// (the row then prices a read alone). It starts 2 × costRounds sandboxes: doctor
// only, never on the launch path.
func mountCost(ctx context.Context, bin string) (perMount time.Duration, ok bool) {
	base := []string{"--unshare-all", "--die-with-parent", "--ro-bind", "/usr", "/usr",
		"--symlink", "usr/bin", "/bin", "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64", "--tmpfs", "/t"}
	more := append([]string{}, base...)
	for i := 0; i < costBinds; i++ {
		more = append(more, "--ro-bind", "/usr", fmt.Sprintf("/t/%d", i))
	}
	run := func(args []string) (time.Duration, error) {
		start := time.Now()
		err := runTrial(ctx, bin, append(append([]string{bin}, args...), "--", "/usr/bin/true"), nil)
		return time.Since(start), err
	}
	var with, without []time.Duration
	for i := 0; i < costRounds; i++ {
		pair := [][]string{base, more}
		if i%2 == 1 {
			pair[0], pair[1] = more, base
		}
		for _, args := range pair {
			d, err := run(args)
			if err != nil {
				return 0, false
			}
			if len(args) == len(base) {
				without = append(without, d)
			} else {
				with = append(with, d)
			}
		}
	}
	d := (median(with) - median(without)) / costBinds
	return max(d, 0), true
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// readsTable reports whether the bubblewrap that says version reads the mount table
// after its mounts (before 0.13, or a version it does not say).
func readsTable(version string) bool {
	got, ok := parseVersion(version)
	return !ok || versionLess(got, mountScanDropped)
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
