package krun

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/containers/podman/v5/pkg/bindings/containers"
	"github.com/containers/podman/v5/pkg/bindings/images"

	"github.com/devsandbox/devsandbox/isolator/container"
	"github.com/devsandbox/devsandbox/isolator/imageuse"
)

// imageStore is the part of podman's API `sandboxes prune` uses.
type imageStore interface {
	// DefaultImages lists the images labelled as devsandbox's default image
	// (container.LabelImage = "default").
	DefaultImages() ([]container.Image, error)
	// Users counts the containers, running or not, made from image id.
	Users(id string) (int, error)
	RemoveImage(id string) error
	// HasImage says whether podman has the image of ID id.
	HasImage(id string) (bool, error)
}

// PruneImages removes from the user's podman storage the containers killed runs left
// (see leftovers.go), then the default images of other devsandbox builds
// (container.StaleDefault: named and labelled by devsandbox, never an image of the
// user's own) that no container uses, krun.image does not name, and no run used within
// maxAge (the records in stateRoot, package imageuse; with none, the image's own age:
// imageuse.Decide), or with dryRun only says so. The storage is the user's alone: every
// use of its images is a run of the user's, recorded in stateRoot (unless that run had
// another state directory). It returns one line per container and image, what was (or
// would be) done and why. The krun backend derives no images: a run uses krun.image as
// it is. Last, the records of images' ENV that no launch will use go
// (pruneImageEnv): those of the images removed, of images podman no longer has, and
// those no launch used within maxAge.
//
// A dry run starts nothing and makes nothing: it lists what a service already running
// shows, and without one it says in one line that podman's containers and images are
// not listed (a dry run must not start podman's service, which makes its sockets,
// locks and log in the runtime directory and podman's storage when missing); its
// ENV records are then listed by their age alone, and a line says what was not checked.
func (b *Isolator) PruneImages(ctx context.Context, stateRoot string, maxAge time.Duration, dryRun bool) ([]string, error) {
	var conn engine
	var err error
	if dryRun {
		conn, err = b.connectRunning(ctx, b.hostAccess())
	} else {
		conn, err = b.connect(ctx, b.hostAccess(), nil) // no container: no rlimit asked
	}
	var out []string
	var errs []error
	gone := map[string]bool{} // the IDs of the images removed, or that would be
	var has func(id string) (bool, error)
	switch {
	case dryRun && errors.Is(err, errNotRunning):
		out = append(out, fmt.Sprintf("not listed: the containers and default images in podman (the krun isolator's): %v, and a dry run starts nothing; `devsandbox sandboxes prune` without --dry-run starts it and prunes them", err))
		err = fmt.Errorf("%w, and a dry run starts nothing", err)
	case err != nil:
		errs = append(errs, err)
	default:
		var lines []string
		lines, err = b.pruneImages(conn, stateRoot, gone, maxAge, dryRun)
		out = append(out, lines...)
		if err != nil {
			errs = append(errs, err)
		}
		err = errors.New("this podman connection cannot list images")
		if store, ok := conn.(imageStore); ok {
			has, err = store.HasImage, nil
		}
	}
	// Then the records of the images' ENV: those of the images just removed go too.
	lines, rerr := pruneImageEnv(stateRoot, gone, has, err, time.Now(), maxAge, dryRun)
	return append(out, lines...), errors.Join(append(errs, rerr)...)
}

// pruneImages is PruneImages' part on the connection conn: the containers, then the
// images, whose IDs it adds to gone when it removes them (or would).
func (b *Isolator) pruneImages(conn engine, stateRoot string, gone map[string]bool, maxAge time.Duration, dryRun bool) ([]string, error) {
	var out []string
	var errs []error
	if cs, ok := conn.(containerStore); ok {
		lines, err := pruneContainers(cs, time.Now(), dryRun)
		out = append(out, lines...)
		if err != nil {
			errs = append(errs, err)
		}
	}
	store, ok := conn.(imageStore)
	if !ok {
		return out, errors.Join(append(errs, errors.New("this podman connection cannot list images"))...)
	}
	imgs, err := store.DefaultImages()
	if err != nil {
		return out, errors.Join(append(errs, fmt.Errorf("listing the default images in podman: %w", err))...)
	}
	now := time.Now()
	for _, im := range imgs {
		why := container.StaleDefault(im, b.Settings.Version)
		if why == "" || slices.ContainsFunc(im.Names, func(n string) bool { return shortName(n) == b.Settings.Image }) {
			continue
		}
		short := strings.TrimPrefix(im.ID, "sha256:")
		short = short[:min(12, len(short))]
		name := fmt.Sprintf("%s (%s) in podman", short, shortName(im.Names[0]))
		n, err := store.Users(im.ID)
		if err != nil {
			errs = append(errs, fmt.Errorf("listing the containers of image %s in podman: %w", short, err))
			continue
		}
		if n > 0 {
			out = append(out, fmt.Sprintf("kept image %s: %s, but %d container(s) use it", name, why, n))
			continue
		}
		keep, reason := imageuse.Decide(why, imageuse.Last(stateRoot, imageuse.Podman, im.ID), im.Created, now, maxAge)
		switch {
		case keep:
			out = append(out, fmt.Sprintf("kept image %s: %s", name, reason))
		case dryRun:
			gone[imageIDOf(im.ID)] = true
			out = append(out, fmt.Sprintf("would remove image %s: %s", name, reason))
		default:
			if err := store.RemoveImage(im.ID); err != nil {
				errs = append(errs, fmt.Errorf("removing image %s from podman: %w", short, err))
				continue
			}
			gone[imageIDOf(im.ID)] = true
			imageuse.Forget(stateRoot, imageuse.Podman, im.ID)
			out = append(out, fmt.Sprintf("removed image %s: %s", name, reason))
		}
	}
	return out, errors.Join(errs...)
}

// shortName is an image's name as krun.image (and people) write it: without the
// localhost/ podman gives what it made or committed, or the docker.io/ it gives what
// it loaded or pulled.
func shortName(n string) string {
	return strings.TrimPrefix(strings.TrimPrefix(n, "localhost/"), "docker.io/")
}

func (e *podman) DefaultImages() ([]container.Image, error) {
	all := false
	l, err := images.List(e.ctx, &images.ListOptions{All: &all, Filters: map[string][]string{"label": {container.LabelImage + "=default"}}})
	if err != nil {
		return nil, err
	}
	out := make([]container.Image, 0, len(l))
	for _, im := range l {
		var made time.Time
		if im.Created > 0 {
			made = time.Unix(im.Created, 0)
		}
		out = append(out, container.Image{ID: im.ID, Names: im.RepoTags, Labels: im.Labels, Created: made})
	}
	return out, nil
}

func (e *podman) Users(id string) (int, error) {
	all := true
	l, err := containers.List(e.ctx, &containers.ListOptions{All: &all, Filters: map[string][]string{"ancestor": {id}}})
	return len(l), err
}

func (e *podman) RemoveImage(id string) error {
	_, errs := images.Remove(e.ctx, []string{id}, nil)
	return errors.Join(errs...)
}

func (e *podman) HasImage(id string) (bool, error) {
	return images.Exists(e.ctx, id, nil)
}
