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
)

// imageStore is the part of podman's API `sandboxes prune` uses.
type imageStore interface {
	// DefaultImages lists the images labelled as devsandbox's default image
	// (container.LabelImage = "default").
	DefaultImages() ([]container.Image, error)
	// Users counts the containers, running or not, made from image id.
	Users(id string) (int, error)
	RemoveImage(id string) error
}

// PruneImages removes from the user's podman storage the containers killed runs left
// (see leftovers.go), then the default images of other devsandbox builds
// (container.StaleDefault: named and labelled by devsandbox, never an image of the
// user's own) that no container uses and krun.image does not name, or with dryRun
// only says so. It returns one line per container and image, what was (or would be)
// done. The krun backend derives no images: a run uses krun.image as it is.
func (b *Isolator) PruneImages(ctx context.Context, dryRun bool) ([]string, error) {
	conn, err := b.connect(ctx, b.hostAccess())
	if err != nil {
		return nil, err
	}
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
	for _, im := range imgs {
		why := container.StaleDefault(im, b.Settings.Version)
		if why == "" || slices.ContainsFunc(im.Names, func(n string) bool { return strings.TrimPrefix(n, "localhost/") == b.Settings.Image }) {
			continue
		}
		short := strings.TrimPrefix(im.ID, "sha256:")
		short = short[:min(12, len(short))]
		line := fmt.Sprintf("%s (%s) in podman: %s", short, strings.TrimPrefix(im.Names[0], "localhost/"), why)
		n, err := store.Users(im.ID)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("listing the containers of image %s in podman: %w", short, err))
		case n > 0:
			out = append(out, fmt.Sprintf("kept image %s, but %d container(s) use it", line, n))
		case dryRun:
			out = append(out, "would remove image "+line)
		default:
			if err := store.RemoveImage(im.ID); err != nil {
				errs = append(errs, fmt.Errorf("removing image %s from podman: %w", short, err))
				continue
			}
			out = append(out, "removed image "+line)
		}
	}
	return out, errors.Join(errs...)
}

func (e *podman) DefaultImages() ([]container.Image, error) {
	all := false
	l, err := images.List(e.ctx, &images.ListOptions{All: &all, Filters: map[string][]string{"label": {container.LabelImage + "=default"}}})
	if err != nil {
		return nil, err
	}
	out := make([]container.Image, 0, len(l))
	for _, im := range l {
		out = append(out, container.Image{ID: im.ID, Names: im.RepoTags, Labels: im.Labels})
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
