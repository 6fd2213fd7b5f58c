package krun

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/devsandbox/devsandbox/isolator/imageuse"
)

// tmpAge is how old a temporary file of saveImageEnv must be before prune takes it
// for one a killed launch left: a launch renames it within milliseconds.
const tmpAge = time.Minute

// pruneImageEnv removes the image ENV records (imageenv.go) in stateRoot that no
// launch will use, or with dryRun only says so: the record of an image this prune
// removed (gone, by ID), of an image podman no longer has (has; nil when podman could
// not be asked: notAsked says why, and a line says what was not checked), and of one
// no launch used within maxAge, by the rule prune keeps images by (imageuse.Decide on
// the later of the image's recorded use, which every launch sets, and the record's
// own time). A record that cannot be read, and a temporary file a killed launch
// left, go too: a launch ignores them. A launch that finds no record inspects the
// image, as the first launch of a reference does. Nothing is followed: the directory
// is opened without following a link at it (one there is an error, left as it is),
// and entries are read and removed relative to it, a link among them left alone. It
// returns one line per record removed (or that would be).
func pruneImageEnv(stateRoot string, gone map[string]bool, has func(id string) (bool, error), notAsked error, now time.Time, maxAge time.Duration, dryRun bool) ([]string, error) {
	dir := filepath.Join(stateRoot, imageEnvDir)
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	switch {
	case errors.Is(err, unix.ENOENT):
		return nil, nil
	case errors.Is(err, unix.ELOOP), errors.Is(err, unix.ENOTDIR):
		return nil, fmt.Errorf("pruning krun's image ENV records: %s is a link or not a directory (devsandbox makes a directory there), left as it is; remove it and krun's launches make it anew", dir)
	case err != nil:
		return nil, fmt.Errorf("pruning krun's image ENV records: %w", err)
	}
	d := os.NewFile(uintptr(fd), dir)
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return nil, fmt.Errorf("pruning krun's image ENV records: reading %s: %w", dir, err)
	}
	slices.Sort(names)
	verb := "removed"
	if dryRun {
		verb = "would remove"
	}
	var out []string
	e := envPrune{stateRoot: stateRoot, gone: gone, has: has, now: now, maxAge: maxAge, dryRun: dryRun}
	for _, name := range names {
		why := e.stale(fd, name)
		if why == "" {
			continue
		}
		if !dryRun {
			// Unlinkat follows nothing. It removes whatever the name holds now: a record a
			// launch wrote meanwhile goes too, and costs that reference one inspect.
			if err := unix.Unlinkat(fd, name, 0); err != nil && !errors.Is(err, unix.ENOENT) {
				e.errs = append(e.errs, fmt.Errorf("removing %s: %w", filepath.Join(dir, name), err))
				continue
			}
		}
		out = append(out, fmt.Sprintf("%s %s: %s", verb, filepath.Join(dir, name), why))
	}
	if e.unchecked > 0 {
		out = append(out, fmt.Sprintf("not checked: whether podman still has the images of %d image ENV record(s) of krun in %s, kept for their recent use: %v", e.unchecked, dir, notAsked))
	}
	return out, errors.Join(e.errs...)
}

// envPrune is one pruneImageEnv: its arguments, the records kept only because podman
// was not asked about their image (unchecked), and the errors met.
type envPrune struct {
	stateRoot string
	gone      map[string]bool
	has       func(id string) (bool, error)
	now       time.Time
	maxAge    time.Duration
	dryRun    bool
	unchecked int
	errs      []error
}

// stale says why the entry name of the records' directory fd goes ("": it stays). A
// failed question to podman is added to e.errs and keeps the record.
func (e *envPrune) stale(fd int, name string) string {
	if !strings.HasPrefix(name, ".tmp-") && (len(name) != 32 || imageIDOf(name) == "") {
		return "" // not a name devsandbox gives
	}
	rfd, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return "" // a link (ELOOP) stays
	}
	f := os.NewFile(uintptr(rfd), name)
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return "" // only regular files are devsandbox's
	}
	if strings.HasPrefix(name, ".tmp-") {
		if e.now.Sub(fi.ModTime()) > tmpAge {
			return "a record a killed launch left half-written"
		}
		return ""
	}
	r, ok := readImageEnv(f)
	if !ok || filepath.Base(imageEnvPath("", r.Ref)) != name {
		return "not a record a launch can use (unreadable, or of another reference)"
	}
	id := imageIDOf(r.ID)
	short := id[:min(12, len(id))]
	what := fmt.Sprintf("the ENV of image %s (%s), recorded for krun's launches", r.Ref, short)
	if e.gone[id] {
		if e.dryRun {
			return what + ", whose image this prune would remove"
		}
		return what + ", whose image this prune removed"
	}
	if e.has != nil {
		there, err := e.has(id)
		if err != nil {
			e.errs = append(e.errs, fmt.Errorf("asking podman for image %s (of the record %s): %w", short, name, err))
			return ""
		}
		if !there {
			return what + ", but podman no longer has that image"
		}
	}
	last := imageuse.Last(e.stateRoot, imageuse.Podman, id)
	if fi.ModTime().After(last) {
		last = fi.ModTime()
	}
	if keep, reason := imageuse.Decide(what, last, time.Time{}, e.now, e.maxAge); !keep {
		return reason
	}
	if e.has == nil {
		e.unchecked++
	}
	return ""
}
