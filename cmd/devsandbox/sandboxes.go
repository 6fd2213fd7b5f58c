package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/devsandbox/devsandbox/config"
	"github.com/devsandbox/devsandbox/internal/termsafe"
	"github.com/devsandbox/devsandbox/isolator/cgroup"
	dockerhelper "github.com/devsandbox/devsandbox/isolator/docker/helper"
	"github.com/devsandbox/devsandbox/isolator/etcsnap"
	"github.com/devsandbox/devsandbox/isolator/handoff"
	krunhelper "github.com/devsandbox/devsandbox/isolator/krun/helper"
	"github.com/devsandbox/devsandbox/isolator/planner"
	"github.com/devsandbox/devsandbox/isolator/projlock"
	"github.com/devsandbox/devsandbox/isolator/sockdir"
	"github.com/devsandbox/devsandbox/tools"
)

func (a *app) sandboxesCommand(jsonFlag cli.Flag) *cli.Command {
	return &cli.Command{
		Name:        "sandboxes",
		Usage:       "list and remove what devsandbox keeps per project",
		Description: a.describe("What devsandbox keeps per project: kept containers, home volumes, sandbox homes and state."),
		Subcommands: []*cli.Command{
			{Name: "list", Usage: "every project's kept container, volume and sandbox home, with sizes", Flags: []cli.Flag{jsonFlag}, Action: a.sandboxesList,
				Description: a.describe("The sizes of a sandbox home and a state directory (which the sandbox writes) come from a walk that follows no link and stops after 100000 entries, at depth 64 or after 2 s; the size is then a lower bound, shown as \"≥ 1.2G (stopped after 100000 entries)\" (--json: homeSizeBound and homeSizeStop, stateSizeBound and stateSizeStop). Names (a project's directory names its sandbox) are printed with what a terminal would act on, a newline or a tab escaped; --json writes them as \\uXXXX.")},
			{Name: "rm", Usage: "remove what devsandbox keeps for the named projects", ArgsUsage: "NAME...",
				Description: a.describe("Removes the kept container, the home volume, the sandbox home, the state and the socket directory (in the state, in $XDG_RUNTIME_DIR/devsandbox, or in the temporary directory when the state path was too long for socket names; never one a session holds) of each named project (NAME as `sandboxes list` shows it); refuses one a run is using or starting in, and a run that starts meanwhile waits for the removal."), Action: a.sandboxesRm},
			{Name: "prune", Usage: "remove what belongs to projects gone or unused for --days", Description: a.describe("Removes what belongs to projects that no longer exist or were unused for --days (never one a run is using or starting in; a run that starts meanwhile waits for the removal); what crashed docker runs left in the engine (a kill -9 of devsandbox, an engine restart mid-run: stopped containers, and a run's own volumes no container uses; content volumes of projects no run is using), never a kept container, a running one, or a home volume; the containers krun runs left in your podman storage when devsandbox-krun was killed (exited, or never started, over a minute ago; never a running one); the session cgroups that bwrap runs killed with kill -9 left (empty, no run holding them); the session /tmp dirs of bwrap runs that were killed (over a minute old, no run holding them); bwrap's early-start launch records ($XDG_STATE_HOME/devsandbox/prestart) no launch wrote or used within --days (regular files named as records only: never a link, a directory or another file there); the socket directories in the temporary directory (devsandbox-UID-XXXXXXXX) that no project's state records, and those in $XDG_RUNTIME_DIR/devsandbox of projects that have no state (over a minute old, no run holding them, no socket in them answering; never a link or another user's); krun's anchors directories there (anchors-*) that killed krun runs left (over a minute old, no run holding them; never a link or another user's); the snapshots of the host's /etc files that bwrap runs mount, except the newest and those a run holds; and the images no container uses and no run of yours used within --days (each docker and krun run records its use in $XDG_STATE_HOME/devsandbox/image-use; an image with no use recorded counts from when it was made): the images derived from docker.image (any build's; one whose base name now names another image goes at once), and the default images of other devsandbox builds, in the docker engine and in your podman storage: only images devsandbox named and labelled (devsandbox/default:VERSION with its labels), never one of yours, nor this build's, nor the one docker.image or krun.image names, nor in the docker engine one another uid built; then krun's image ENV records ($XDG_STATE_HOME/devsandbox/krun-image-env) of images it removed, that podman no longer has, or that no launch used within --days (never a link); and the entries of the derived-image cache ($XDG_STATE_HOME/devsandbox/docker-images.json) whose image it removed, whose image the engine the entry names no longer has (an engine at a Unix socket is asked; one that cannot be asked keeps its entries a run used within --days, and a line says so), or that no run used within --days (rewritten under the runs' lock, never through a link). Each image line says why it goes or stays."), Flags: []cli.Flag{
				&cli.IntFlag{Name: "days", Value: 30, Usage: "remove sandboxes unused for `N` days, and images no run used for N days"},
				&cli.BoolFlag{Name: "dry-run", Usage: "only print what would be removed"},
			}, Action: a.sandboxesPrune},
		},
	}
}

func (a *app) imageCommand() *cli.Command {
	return &cli.Command{
		Name:  "image",
		Usage: "the docker isolator's default image",
		Subcommands: []*cli.Command{{
			Name:        "build",
			Usage:       "build the default image (docker.image) from devsandbox's Dockerfile",
			Description: a.describe("Builds --tag from devsandbox's Dockerfile on --base, any image with /bin/sh: when git or ssh is missing and the base has apt-get, they are added (with CA certificates)."),
			Flags: []cli.Flag{
				&cli.StringFlag{Name: "base", Value: "debian:bookworm-slim", Usage: "base `IMAGE`, with /bin/sh"},
				&cli.StringFlag{Name: "tag", Usage: "image `NAME` to build (default: docker.image)"},
			},
			Action: a.imageBuild,
		}},
	}
}

// docker is the docker backend of a subcommand, with the project's configuration
// when the working directory is in one, else the user's alone.
func (a *app) docker(c *cli.Context) (*dockerhelper.Stub, *config.Config, error) {
	if l, err := a.load(a.flags(c)); err == nil {
		return dockerStub(l.Config, nil), l.Config, nil
	}
	cfg, warns, err := planner.LoadUser(a.flags(c), a.environ, tools.Default())
	if err != nil {
		return nil, nil, err
	}
	for _, w := range warns {
		a.warn("%s", w)
	}
	return dockerStub(cfg, nil), cfg, nil
}

// sandboxes lists what devsandbox keeps, from the host and the engine; lerr says why
// the engine was not asked, when it was not.
func (a *app) sandboxes(c *cli.Context) (d *dockerhelper.Stub, list []dockerhelper.Sandbox, lerr, err error) {
	d, _, _, list, lerr, err = a.sandboxesOf(c)
	return d, list, lerr, err
}

// sandboxesOf is sandboxes, with the configuration and the directories and user
// asked about.
func (a *app) sandboxesOf(c *cli.Context) (d *dockerhelper.Stub, cfg *config.Config, dirs dockerhelper.Dirs, list []dockerhelper.Sandbox, lerr, err error) {
	d, cfg, err = a.docker(c)
	if err != nil {
		return nil, nil, dirs, nil, nil, err
	}
	h := cfg.Host
	dirs = dockerhelper.Dirs{Data: filepath.Join(h.DataHome, "devsandbox"), State: filepath.Join(h.StateHome, "devsandbox"), UID: h.UID}
	list, lerr = d.Sandboxes(context.Background(), dirs)
	return d, cfg, dirs, list, lerr, nil
}

func (a *app) sandboxesList(c *cli.Context) error {
	_, list, lerr, err := a.sandboxes(c)
	if err != nil {
		return err
	}
	if errors.Is(lerr, dockerhelper.ErrEngineRefused) {
		return lerr // not a Docker engine: nothing of it is listed
	}
	if lerr != nil {
		a.warn("the docker engine was not asked: %v", lerr)
	}
	if c.Bool("json") {
		if list == nil {
			list = []dockerhelper.Sandbox{}
		}
		return a.writeJSON(list)
	}
	return dockerhelper.WriteTable(a.stdout, list)
}

func (a *app) sandboxesRm(c *cli.Context) error {
	if c.Args().Len() == 0 {
		return usageError{errors.New("sandboxes rm needs at least one NAME (see devsandbox sandboxes list)")}
	}
	d, cfg, dirs, list, lerr, err := a.sandboxesOf(c)
	if err != nil {
		return err
	}
	if errors.Is(lerr, dockerhelper.ErrEngineRefused) {
		return lerr // not a Docker engine: nothing is removed, here or there
	}
	byName := dockerhelper.ByName(list)
	var errs []error
	for _, n := range c.Args().Slice() {
		s, ok := byName[n]
		if !ok {
			errs = append(errs, fmt.Errorf("no sandbox named %s; `devsandbox sandboxes list` shows the names (a project's directory name and its id: myproject-1a2b3c4d)", n))
			continue
		}
		if len(s.Containers) == 0 && lerr != nil {
			a.warn("the docker engine was not asked (%v); only the host side of %s is removed", lerr, n)
		}
		if err := a.removeIdle(dirs.State, s, func() error { return a.removeWithSocketDir(s, cfg.Host.RuntimeDir, dirs.UID, d.RemoveSandbox) }); err != nil {
			errs = append(errs, err)
			continue
		}
		fmt.Fprintf(a.stdout, "removed %s\n", termsafe.Line(n))
	}
	return errors.Join(errs...)
}

// removeWithSocketDir removes s with remove (its state, and with it a socket
// directory in the state, <state>/sock), then its socket directories elsewhere
// (package sockdir): the one its state recorded in the temporary directory and its
// own in $XDG_RUNTIME_DIR/devsandbox (runtime), unless one is no longer a directory of
// the user's that nobody holds: it is left, with a warning.
func (a *app) removeWithSocketDir(s dockerhelper.Sandbox, runtime string, uid int, remove func(context.Context, dockerhelper.Sandbox) error) error {
	sock := ""
	if s.State != "" {
		sock = sockdir.RecordedTemp(s.State)
	}
	err := remove(context.Background(), s)
	if sock != "" {
		if serr := sockdir.RemoveRecorded(sock, uid); serr != nil {
			a.warn("the socket directory of %s: %v", s.Name, serr)
		}
	}
	if serr := sockdir.RemoveRuntime(runtime, projectID(s.Name), uid); serr != nil {
		a.warn("the socket directory of %s: %v", s.Name, serr)
	}
	return err
}

// projectID is the ID in a sandbox's name (<basename>-<id>), "" when it has none.
func projectID(name string) string {
	i := strings.LastIndexByte(name, '-')
	if i < 0 {
		return ""
	}
	return name[i+1:]
}

// errInUse is the class of a sandbox rm refuses: a run of it is going on or starting.
var errInUse = errors.New("in use")

// removeIdle calls remove unless a run of s is going on or starting, holding s's lock
// (package projlock) from the check to remove's return, as prune does.
func (a *app) removeIdle(stateRoot string, s dockerhelper.Sandbox, remove func() error) error {
	unlock, ok, err := projlock.TryExclusive(stateRoot, s.Name)
	if err != nil {
		return fmt.Errorf("%s was not removed: %w", s.Name, err)
	}
	if !ok {
		return fmt.Errorf("%s was not removed: a run of it is going on or starting (%w: it holds the project's lock %s); run `devsandbox sandboxes rm %s` again once it has ended", s.Name, errInUse, projlock.Path(filepath.Join(stateRoot, s.Name)), s.Name)
	}
	defer unlock()
	if runGoingOn(s.State) {
		return fmt.Errorf("%s was not removed: a run of it is going on (%w: it holds a session /tmp in %s or a run mark in %s); run `devsandbox sandboxes rm %s` again once it has ended", s.Name, errInUse, filepath.Join(s.State, "tmp"), filepath.Join(s.State, "runs"), s.Name)
	}
	return remove()
}

// sandboxesPrune sweeps bwrap's session cgroups first: they need no engine, and
// neither devsandbox-docker nor an engine has to be there for them.
// maxPruneDays is the largest --days whose age a time.Duration holds (about 292
// years): beyond it the age wrapped negative and prune took every project for unused.
const maxPruneDays = int(math.MaxInt64 / int64(24*time.Hour))

func (a *app) sandboxesPrune(c *cli.Context) error {
	if days := c.Int("days"); days < 0 || days > maxPruneDays {
		return usageError{fmt.Errorf("sandboxes prune --days %d: not a number of days from 0 to %d", days, maxPruneDays)}
	}
	cgroup.Prune(a.stdout, c.Bool("dry-run"))
	d, cfg, dirs, list, lerr, err := a.sandboxesOf(c)
	if err != nil {
		return err
	}
	if errors.Is(lerr, dockerhelper.ErrEngineRefused) {
		return lerr // not a Docker engine: nothing is pruned, in it or in podman's storage
	}
	a.pruneEtc(filepath.Dir(dirs.State), c.Bool("dry-run"))
	a.pruneTmp(dirs.State, c.Bool("dry-run"))
	a.pruneSocketDirs(cfg, dirs, c.Bool("dry-run"))
	maxAge := time.Duration(c.Int("days")) * 24 * time.Hour
	a.pruneRecords(dirs.State, maxAge, c.Bool("dry-run"))
	a.prunePodmanImages(cfg, dirs.State, maxAge, c.Bool("dry-run"))
	switch {
	case lerr != nil && !d.Installed():
		a.warn("the docker isolator (%s) is not installed: no containers or volumes to prune", dockerhelper.Program)
		return nil
	case lerr != nil:
		return fmt.Errorf("the docker engine must answer for prune to know what is in use: %w", lerr)
	}
	return a.pruneIdle(dirs.State, list, maxAge, c.Bool("dry-run"), func(idle []dockerhelper.Sandbox, busy []string) error {
		// The pruned sandboxes, by name, with the socket directory their state recorded
		// in the temporary directory ("" for none).
		socks := map[string]string{}
		for _, sb := range idle {
			if sb.State != "" && dockerhelper.Prunable(sb, time.Now(), maxAge) != "" {
				socks[sb.Name] = sockdir.RecordedTemp(sb.State)
			}
		}
		err := d.Prune(context.Background(), dirs.UID, dirs.State, idle, busy, maxAge, c.Bool("dry-run"), a.stdout)
		a.removeSocketDirsOf(idle, socks, cfg.Host.RuntimeDir, dirs.UID, c.Bool("dry-run"))
		return err
	})
}

// pruneSocketDirs removes the orphan socket directories in the temporary directory
// (sockdir.PruneTemp) and in $XDG_RUNTIME_DIR/devsandbox (sockdir.PruneRuntime):
// those of projects whose state is gone; and there krun's anchors directories that
// no session holds (sockdir.PruneAnchors).
func (a *app) pruneSocketDirs(cfg *config.Config, dirs dockerhelper.Dirs, dryRun bool) {
	gone, err := sockdir.PruneTemp(sockdir.Host{TempDir: cfg.Host.Vars["TMPDIR"], UID: dirs.UID}, dirs.State, time.Now(), dryRun)
	if err != nil {
		a.warn("the socket directories in the temporary directory were not pruned: %v", err)
	}
	for _, d := range gone {
		fmt.Fprintf(a.stdout, "%s %s: a socket directory no project's state records\n", verb(dryRun), termsafe.Line(d))
	}
	// krun stages anchors where podman keeps its runtime files: without
	// XDG_RUNTIME_DIR, /run/user/UID (krun's podmanRuntimeDir).
	anchorsIn := cfg.Host.RuntimeDir
	if anchorsIn == "" && dirs.UID != 0 {
		anchorsIn = filepath.Join("/run/user", strconv.Itoa(dirs.UID))
	}
	gone, err = sockdir.PruneAnchors(anchorsIn, dirs.UID, time.Now(), dryRun)
	if err != nil {
		a.warn("krun's anchors directories in %s were not pruned: %v", anchorsIn, err)
	}
	for _, d := range gone {
		fmt.Fprintf(a.stdout, "%s %s: krun's anchors directory of a session that ended\n", verb(dryRun), termsafe.Line(d))
	}
	keep := map[string]bool{} // the IDs of the projects whose state is there
	states, err := os.ReadDir(dirs.State)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		a.warn("the socket directories in %s were not pruned: %v", cfg.Host.RuntimeDir, err)
		return
	}
	for _, st := range states {
		if id := projectID(st.Name()); id != "" {
			keep[id] = true
		}
	}
	gone, err = sockdir.PruneRuntime(cfg.Host.RuntimeDir, keep, dirs.UID, time.Now(), dryRun)
	if err != nil {
		a.warn("the socket directories in %s were not pruned: %v", cfg.Host.RuntimeDir, err)
	}
	for _, d := range gone {
		fmt.Fprintf(a.stdout, "%s %s: the socket directory of a project that has no state\n", verb(dryRun), termsafe.Line(d))
	}
}

// removeSocketDirsOf removes the socket directories of the sandboxes of idle whose
// state prune removed (socks: by name, the one recorded in the temporary directory,
// or ""), and their own in $XDG_RUNTIME_DIR/devsandbox (runtime); with dryRun it names
// them. It runs under their projects' locks, which pruneIdle holds.
func (a *app) removeSocketDirsOf(idle []dockerhelper.Sandbox, socks map[string]string, runtime string, uid int, dryRun bool) {
	for _, sb := range idle {
		d, ok := socks[sb.Name]
		if !ok {
			continue
		}
		var all []string
		if d != "" {
			all = append(all, d)
		}
		if filepath.IsAbs(runtime) {
			all = append(all, sockdir.RuntimeDir(runtime, projectID(sb.Name)))
		}
		if dryRun {
			for _, d := range all {
				if _, err := os.Lstat(d); err == nil {
					fmt.Fprintf(a.stdout, "would remove %s: the socket directory of %s\n", termsafe.Line(d), termsafe.Line(sb.Name))
				}
			}
			continue
		}
		if _, err := os.Lstat(sb.State); err == nil {
			continue // kept: its removal failed
		}
		for _, d := range all {
			if _, err := os.Lstat(d); err != nil {
				continue // none (the runtime one is made only when XDG_RUNTIME_DIR is usable)
			}
			var err error
			if d == socks[sb.Name] {
				err = sockdir.RemoveRecorded(d, uid)
			} else {
				err = sockdir.RemoveRuntime(runtime, projectID(sb.Name), uid)
			}
			if err != nil {
				a.warn("the socket directory of %s: %v", sb.Name, err)
				continue
			}
			fmt.Fprintf(a.stdout, "removed %s: the socket directory of %s\n", termsafe.Line(d), termsafe.Line(sb.Name))
		}
	}
}

// verb is what prune says it did.
func verb(dryRun bool) string {
	if dryRun {
		return "would remove"
	}
	return "removed"
}

// afterPruneCheck, when set (by tests), runs between prune's check of the projects'
// runs and the removal.
var afterPruneCheck func()

// pruneIdle calls remove with the sandboxes of list no run is using or starting in,
// and the names of the others, holding the lock (package projlock) of each idle one
// from its check to remove's return: a run that starts meanwhile waits for the
// removal to finish, then makes the project's directories anew. A dry run removes
// nothing and takes no lock.
func (a *app) pruneIdle(stateRoot string, list []dockerhelper.Sandbox, maxAge time.Duration, dryRun bool, remove func(idle []dockerhelper.Sandbox, busy []string) error) error {
	lock := func(name string) (func(), bool) { return func() {}, true }
	if !dryRun {
		lock = func(name string) (func(), bool) {
			unlock, ok, err := projlock.TryExclusive(stateRoot, name)
			if err != nil {
				a.warn("%s is kept: %v", name, err)
			}
			return unlock, ok
		}
	}
	var unlocks []func()
	defer func() {
		for _, u := range unlocks {
			u()
		}
	}()
	idle, busy := a.notRunning(list, maxAge, func(name string) bool {
		unlock, ok := lock(name)
		if ok {
			unlocks = append(unlocks, unlock)
		}
		return ok
	})
	if afterPruneCheck != nil {
		afterPruneCheck()
	}
	return remove(idle, busy)
}

// notRunning is list without the sandboxes a run is using (or starting in), and the
// names of those: their last use is when the run started, and with --days 0, or a run
// longer than --days, prune would remove the home and state directory of a sandbox in
// use; and the run may have found a content volume it has not bound yet. One that
// would have been pruned is named. lock takes a sandbox's lock before its check (false:
// a run holds it, it is starting); the lock of one found in use is kept too, and
// released with the others.
func (a *app) notRunning(list []dockerhelper.Sandbox, maxAge time.Duration, lock func(name string) bool) (idle []dockerhelper.Sandbox, busy []string) {
	for _, sb := range list {
		if lock(sb.Name) && !runGoingOn(sb.State) {
			idle = append(idle, sb)
			continue
		}
		busy = append(busy, sb.Name)
		if why := dockerhelper.Prunable(sb, time.Now(), maxAge); why != "" {
			fmt.Fprintf(a.stdout, "kept %s (%s): a run of it is going on\n", termsafe.Line(sb.Name), termsafe.Line(why))
		}
	}
	return idle, busy
}

// prunePodmanImages removes the default images of other devsandbox builds that no
// run used within maxAge from the user's podman storage (the krun isolator's), and
// krun's image ENV records no launch will use, when devsandbox-krun and podman are
// installed; a podman that cannot be asked is a warning, not a failed prune.
func (a *app) prunePodmanImages(cfg *config.Config, stateRoot string, maxAge time.Duration, dryRun bool) {
	if handoff.Beside(krunhelper.Program) == "" {
		return
	}
	if _, err := exec.LookPath("podman"); err != nil {
		return
	}
	s, ok := krunStub(cfg, nil).(*handoff.Stub)
	if !ok {
		return
	}
	lines, err := krunhelper.PruneImages(context.Background(), s, stateRoot, maxAge, dryRun)
	for _, l := range lines {
		fmt.Fprintln(a.stdout, termsafe.Line(l))
	}
	if err != nil {
		what := "pruned"
		if dryRun {
			what = "listed"
		}
		a.warn("krun's part (podman's containers and default images, krun's image ENV records) was not all %s: %v", what, err)
	}
}

// pruneEtc removes the /etc snapshots of bwrap runs beyond the newest few, except
// those a run holds, and what interrupted builds left.
func (a *app) pruneEtc(stateHome string, dryRun bool) {
	verb := "removed"
	if dryRun {
		verb = "would remove"
	}
	gone, err := etcsnap.Prune(etcsnap.Root(stateHome), etcsnap.Keep, dryRun)
	if err != nil {
		a.warn("the /etc snapshots in %s were not pruned: %v", etcsnap.Root(stateHome), err)
	}
	for _, d := range gone {
		fmt.Fprintf(a.stdout, "%s %s: a snapshot of the host's /etc files no run uses\n", verb, termsafe.Line(d))
	}
}

func (a *app) imageBuild(c *cli.Context) error {
	d, cfg, err := a.docker(c)
	if err != nil {
		return err
	}
	tag := c.String("tag")
	if tag == "" {
		tag = cfg.Docker.Image
	}
	fmt.Fprintf(a.stderr, "building %s from %s\n", tag, c.String("base"))
	if err := d.BuildImage(context.Background(), c.String("base"), tag, a.stderr); err != nil {
		return err
	}
	fmt.Fprintf(a.stdout, "built %s\n", tag)
	return nil
}
