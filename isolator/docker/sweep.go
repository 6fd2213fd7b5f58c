package docker

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	dockercontainer "github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/volume"
	"golang.org/x/sys/unix"

	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/isolator/docker/helper"
	"github.com/devsandbox/devsandbox/isolator/pin"
)

// What a crash leaves in the engine, and how the sweep tells it from what is in use.
//
// A run's containers auto-remove when they stop, and a one-shot run's anonymous
// volumes (the init's) go with them. A `kill -9` of devsandbox and devsandbox-docker
// leaves the session's endpoint volume (named, so the engine keeps it); an engine
// restart mid-run leaves the anonymous volumes of the containers it stopped (Docker
// 20.10 removes an AutoRemove container at shutdown but fails to remove its volumes,
// "database not open") and, when the engine is down longer than devsandbox-docker
// waits, the endpoint volume too. The sweep removes, for one user only (LabelUser):
//   - containers that are not kept (LabelKept is not "true") and not running: stopped
//     ones, and ones created over leftoverAge ago that never started (a younger one
//     may be a concurrent run's, about to start);
//   - volumes no container uses (the engine's "dangling") that are a run's own: an
//     init volume (LabelRole "init": it is created with its container, so dangling
//     means its container is gone), or a session's endpoint volume whose owner (the
//     devsandbox-docker that created it, LabelOwner) is gone, or, when the owner is
//     not this machine's to check, one over leftoverAge old (a younger one may be a
//     concurrent run's, between creating it and creating its containers);
//   - content and volatile volumes (contentvol.go) no container binds, of a project
//     no other run of which is going on (markRun: such a run may have made or found
//     one that it binds next); in a run's sweep, only those over leftoverAge old too.
//
// Never a kept container, a running container (a kept container's companion), a home
// volume or a kept container's endpoint volume (they carry neither label), nor another
// user's objects.
const (
	// LabelOwner is the boot id, pid and start time of the devsandbox-docker process
	// that created a session's endpoint volume (not a secret).
	LabelOwner = "dev.devsandbox.owner"
	roleInit   = "init" // LabelRole of a run's init volume
	// leftoverAge is how long an object that may be a concurrent run's in the making
	// is left alone.
	leftoverAge = time.Minute
)

// When a run sweeps: a one-shot run and a kept run that creates, recreates or starts
// its container always do, while the command runs (off the launch path); a warm run
// in a running kept container (the launch people wait for most often) only when the
// project's last sweep is sweepEvery old or older, or unknown. Its requests (four
// listings) would otherwise compete with the session's exec on every warm launch;
// nothing a sweep removes is in anyone's way meanwhile, and `sandboxes prune` removes
// it all at any time.
const (
	// sweepStamp, in the project's state directory, has the time of its last
	// completed sweep.
	sweepStamp = "docker-sweep"
	sweepEvery = 10 * time.Minute
	// sweepWait bounds how long a run that ended waits for its sweep.
	sweepWait = 2 * time.Second
)

// goSweep sweeps the project's leftovers (current is the run's container) in the
// background when always is set or a sweep is due, and returns a function that waits
// for it (at most sweepWait), so that it is not cut short by the end of the process.
//
// own is the run's mark (markRun): while another run of the project holds one, the
// sweep leaves the project's content volumes alone (that run may have found one it has
// not bound yet).
func goSweep(ctx context.Context, e Engine, p *isolator.Plan, current, own string, always bool) (wait func()) {
	stamp := filepath.Join(p.StateDir, sweepStamp)
	now := time.Now()
	if !always && !sweepDue(stamp, now) {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		var busy []string
		if othersRunning(p.StateDir, own, now) {
			busy = []string{p.Project.Name}
		}
		if _, err := sweep(context.WithoutCancel(ctx), e, p.User.UID, p.Project.ID, current, now, false, busy); err == nil {
			recordSweep(stamp, now)
		}
	}()
	return func() {
		select {
		case <-done:
		case <-time.After(sweepWait):
		}
	}
}

// recordSweep sets stamp's time to now, creating it (never through a symbolic link).
func recordSweep(stamp string, now time.Time) {
	f, err := os.OpenFile(stamp, os.O_WRONLY|os.O_CREATE|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return // the next warm run sweeps again
	}
	defer f.Close()
	tv := unix.NsecToTimeval(now.UnixNano())
	_ = unix.Futimes(int(f.Fd()), []unix.Timeval{tv, tv})
}

// sweepDue reports whether a warm run sweeps: the last sweep recorded in stamp is
// sweepEvery old or older, in the future (a clock set back), or unknown (stamp is
// missing or not a regular file).
func sweepDue(stamp string, now time.Time) bool {
	fi, err := os.Lstat(stamp)
	if err != nil || !fi.Mode().IsRegular() {
		return true
	}
	age := now.Sub(fi.ModTime())
	return age >= sweepEvery || age < 0
}

// Leftover is one object the sweep removes (or would).
type Leftover = helper.Leftover

// sweep removes what crashed runs of user uid left in the engine (see above): of
// project projectID, or of every project when it is "". Container current is the
// caller's own. dryRun only lists. The content volumes of the projects named in busy
// (runs of them are going on) stay. It goes on past a failure and returns what it
// removed.
func sweep(ctx context.Context, e Engine, uid int, projectID, current string, now time.Time, dryRun bool, busy []string) ([]Leftover, error) {
	mine := filters.NewArgs(filters.Arg("label", LabelUser+"="+strconv.Itoa(uid)))
	if projectID != "" {
		mine.Add("label", LabelProject+"="+projectID)
	} else {
		mine.Add("label", LabelProject)
	}
	var out []Leftover
	cf := mine.Clone()
	for _, s := range []string{"created", "exited", "dead"} {
		cf.Add("status", s)
	}
	cs, err := e.ContainerList(ctx, dockercontainer.ListOptions{All: true, Filters: cf})
	if err != nil {
		return nil, fmt.Errorf("listing containers: %w", err)
	}
	for _, c := range cs {
		if c.ID == current || !leftoverContainer(c, now) {
			continue
		}
		l := Leftover{Kind: "container", Name: strings.TrimPrefix(firstOr(c.Names, c.ID), "/"), Project: c.Labels[LabelName]}
		if !dryRun {
			err := e.ContainerRemove(ctx, c.ID, dockercontainer.RemoveOptions{Force: true, RemoveVolumes: true})
			if err != nil && !cerrdefs.IsNotFound(err) {
				continue
			}
		}
		out = append(out, l)
	}
	vf := mine.Clone()
	vf.Add("dangling", "true")
	vs, err := e.VolumeList(ctx, volume.ListOptions{Filters: vf})
	if err != nil {
		return out, fmt.Errorf("listing volumes: %w", err)
	}
	for _, v := range vs.Volumes {
		if v == nil || !leftoverVolume(v, now, ownerGone) {
			continue
		}
		// Not forced: the engine refuses a volume a container took meanwhile.
		if !dryRun {
			if err := e.VolumeRemove(ctx, v.Name, false); err != nil && !cerrdefs.IsNotFound(err) {
				continue
			}
		}
		out = append(out, Leftover{Kind: "volume", Name: v.Name, Project: v.Labels[LabelName]})
	}
	minAge := leftoverAge
	if projectID == "" {
		// sandboxes prune: a run that made a volume a moment ago holds its mark
		// (busy) from before it made it.
		minAge = 0
	}
	unused, err := contentLeftovers(ctx, e, mine, now, minAge)
	if err != nil {
		return out, fmt.Errorf("listing content volumes: %w", err)
	}
	for _, v := range unused {
		if slices.Contains(busy, v.Labels[LabelName]) {
			continue
		}
		if !dryRun {
			if err := e.VolumeRemove(ctx, v.Name, false); err != nil && !cerrdefs.IsNotFound(err) {
				continue
			}
		}
		out = append(out, Leftover{Kind: "volume", Name: v.Name, Project: v.Labels[LabelName]})
	}
	return out, nil
}

// leftoverContainer reports whether c, a stopped or never started container of the
// user's, is a crash's leftover. Pure.
func leftoverContainer(c dockercontainer.Summary, now time.Time) bool {
	switch {
	case c.Labels[LabelKept] == "true", c.State == "running", c.State == "paused", c.State == "restarting":
		return false
	case c.State == "created":
		return now.Sub(time.Unix(c.Created, 0)) >= leftoverAge
	}
	return true
}

// leftoverVolume reports whether v, a volume of the user's no container uses, is a
// crash's leftover; gone tells whether an owner label's process has ended (and
// whether it could tell). Pure but for gone.
func leftoverVolume(v *volume.Volume, now time.Time, gone func(string) (bool, bool)) bool {
	switch {
	case v.Labels[LabelRole] == roleInit:
		return true
	case v.Labels[LabelRole] == roleAnchor:
		// No session's own, and a concurrent run may have just made (or found) it:
		// removed once it is old enough, as a container that never started.
		created, err := time.Parse(time.RFC3339, v.CreatedAt)
		return err == nil && now.Sub(created) >= leftoverAge
	case v.Labels[LabelSession] == "":
		return false
	}
	if ended, known := gone(v.Labels[LabelOwner]); known {
		return ended
	}
	created, err := time.Parse(time.RFC3339, v.CreatedAt)
	return err == nil && now.Sub(created) >= leftoverAge
}

// owner is LabelOwner's value for this process: boot id, pid and start time.
func owner() string {
	st, err := startTime(os.Getpid())
	if err != nil {
		return ""
	}
	return fmt.Sprintf("%s/%d/%s", pin.BootID(), os.Getpid(), st)
}

// ownerGone reports whether the process an owner label names has ended, and whether it
// can tell: only for a process of this machine's current boot.
func ownerGone(label string) (gone, known bool) {
	boot, rest, ok := strings.Cut(label, "/")
	pidS, start, ok2 := strings.Cut(rest, "/")
	pid, err := strconv.Atoi(pidS)
	if !ok || !ok2 || err != nil || boot == "" || boot != pin.BootID() {
		return false, false
	}
	st, err := startTime(pid)
	if err != nil {
		return os.IsNotExist(err), os.IsNotExist(err)
	}
	return st != start || st == "", true
}

// startTime is field 22 of /proc/PID/stat: the process's start, in clock ticks since
// boot, which tells a reused pid from the process that had it; "" for a process that
// ended and is not reaped yet (a zombie: its parent was killed too).
func startTime(pid int) (string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", err
	}
	// The command name (field 2) may hold spaces and parentheses: fields count from
	// the last ')'.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return "", fmt.Errorf("reading /proc/%d/stat: unexpected format", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return "", fmt.Errorf("reading /proc/%d/stat: unexpected format", pid)
	}
	if f[0] == "Z" || f[0] == "X" {
		return "", nil
	}
	return f[19], nil
}

// Sweep is sweep of every project of user uid, for `devsandbox sandboxes prune`; busy
// names the projects runs of which are going on.
func (b *Isolator) Sweep(ctx context.Context, uid int, dryRun bool, busy []string) ([]Leftover, error) {
	e, a, err := b.engine(ctx)
	if err != nil {
		return nil, err
	}
	defer e.Close()
	out, err := sweep(ctx, e, uid, "", "", time.Now(), dryRun, busy)
	if err != nil {
		st := engineDown(a, err)
		return out, fmt.Errorf("%s; %s", st.Reason, st.Fix)
	}
	return out, nil
}

// engineLost tells, when a command ended by a signal or with no status (code), whether
// the engine went away meanwhile (stopped or restarting: it stops every container),
// and says so: the command's status alone would not tell why it ended. What the run
// left, the next run of the project or `devsandbox sandboxes prune` removes.
//
// It asks on a new connection: a stopping engine closes its listener first and stops
// the containers after, answering on the connections it has meanwhile.
func (b *Isolator) engineLost(ctx context.Context, addr Address, code int) {
	if code < 125 {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	e, _, err := b.engine(ctx)
	if err == nil {
		defer e.Close()
		_, err = e.ServerVersion(ctx)
	}
	if err != nil {
		b.warn("the docker engine at %s went away while the command ran (stopped or restarted): the command was ended (status %d). Once the engine is back, the next run of this project or `devsandbox sandboxes prune` removes what the run left", addr.Host, code)
	}
}
