package krun

import (
	"errors"
	"fmt"
	"time"

	"github.com/containers/podman/v5/pkg/bindings/containers"

	"github.com/devsandbox/devsandbox/isolator/runmark"
)

// What a killed run leaves in podman, and how `sandboxes prune` tells it from a run's.
//
// A run's container is not podman's to remove (no auto-remove: its exit status would
// go with it, see Run); devsandbox-krun removes it on every path out, also when
// devsandbox is gone (the control pipe's end). Only when devsandbox-krun itself dies
// without winding down (kill -9 of it, the OOM killer) is the container left: its
// init exits as its stream ends, so no process is, but the container stays, exited,
// with its writable layer. prune removes a run's container (LabelRuntime) that is not
// running and has been so for over leftoverAge: exited over leftoverAge ago, or
// created over leftoverAge ago and never started. A live run starts its container
// moments after creating it and removes it moments after it exited, so a younger one
// may be a run's still; a running one always is (its init ends with its stream).
//
// Every run also removes, while it starts, the containers whose run provably died:
// labelled with a run mark (LabelRunMark) that no process holds any more
// (runmark.Dead). The run holds its mark from before it creates its container to
// after it removed it, so a container whose mark is dead has no run to remove it. A
// mark's path is asked only where it was made (LabelRunWhere, runmark.Where): a
// podman service can be shared by devsandbox runs that see different files (another
// container of the user's with its own devsandbox, a remote service), where the path
// may name nothing and a live run would look dead. A container without the labels
// (another program's, or an older devsandbox's) or another namespace's is left to
// prune.

// leftoverAge is how long a run's container that is not running is left alone.
const leftoverAge = time.Minute

// runContainer is a run's container as prune sees it.
type runContainer struct {
	ID, Name string
	// Started is whether it ever ran; Exited when it exited (zero: not exited).
	Started bool
	Created time.Time
	Exited  time.Time
}

// containerStore is the part of podman's API the leftover sweep uses.
type containerStore interface {
	// StoppedRuns lists the containers of krun runs (LabelRuntime) that are not
	// running.
	StoppedRuns() ([]runContainer, error)
	RemoveContainer(id string) error
}

// pruneContainers removes the containers killed runs left (see above), or with dryRun
// says which it would; one line each.
func pruneContainers(store containerStore, now time.Time, dryRun bool) ([]string, error) {
	cs, err := store.StoppedRuns()
	if err != nil {
		return nil, fmt.Errorf("listing the containers of krun runs in podman: %w", err)
	}
	var out []string
	var errs []error
	for _, c := range cs {
		var line string
		switch {
		case !c.Exited.IsZero() && now.Sub(c.Exited) > leftoverAge:
			line = fmt.Sprintf("container %s in podman: exited %s ago, left by a krun run that was killed", c.Name, now.Sub(c.Exited).Round(time.Second))
		case !c.Started && c.Exited.IsZero() && now.Sub(c.Created) > leftoverAge:
			line = fmt.Sprintf("container %s in podman: created %s ago and never started, left by a krun run that was killed", c.Name, now.Sub(c.Created).Round(time.Second))
		default:
			continue // maybe a run's still
		}
		if dryRun {
			out = append(out, "would remove "+line)
			continue
		}
		if err := store.RemoveContainer(c.ID); err != nil {
			errs = append(errs, fmt.Errorf("removing container %s from podman: %w", c.Name, err))
			continue
		}
		out = append(out, "removed "+line)
	}
	return out, errors.Join(errs...)
}

func (e *podman) StoppedRuns() ([]runContainer, error) {
	all := true
	l, err := containers.List(e.ctx, &containers.ListOptions{All: &all, Filters: map[string][]string{"label": {LabelRuntime}}})
	if err != nil {
		return nil, err
	}
	var out []runContainer
	for _, c := range l {
		if c.State == "running" || c.State == "paused" || c.State == "stopping" || c.State == "removing" {
			continue
		}
		name := c.ID[:min(12, len(c.ID))]
		if len(c.Names) > 0 {
			name = c.Names[0]
		}
		// podman reports the zero time's Unix seconds (negative) for "never".
		rc := runContainer{ID: c.ID, Name: name, Created: c.Created, Started: c.StartedAt > 0}
		if c.ExitedAt > 0 {
			rc.Exited = time.Unix(c.ExitedAt, 0)
		}
		out = append(out, rc)
	}
	return out, nil
}

func (e *podman) RemoveContainer(id string) error { return e.Remove(id) }

// markedStore is the part of podman's API the sweep of dead runs uses.
type markedStore interface {
	// MarkedRuns lists the containers of krun runs (LabelRuntime) that carry a run
	// mark (LabelRunMark), in any state, by id with their mark.
	MarkedRuns() (map[string]markedRun, error)
	RemoveContainer(id string) error
}

// markedRun is a container's run mark and where its path names it (runmark.Where).
type markedRun struct{ Mark, Where string }

// removeDeadRuns removes the containers whose run mark, made here (runmark.Where; ""
// when unknown: none), dead says is dead, and returns their ids.
func removeDeadRuns(store markedStore, here string, dead func(mark string) bool) ([]string, error) {
	if here == "" {
		return nil, nil
	}
	runs, err := store.MarkedRuns()
	if err != nil {
		return nil, fmt.Errorf("listing the containers of krun runs in podman: %w", err)
	}
	var removed []string
	var errs []error
	for id, r := range runs {
		if r.Mark == "" || r.Where != here || !dead(r.Mark) {
			continue
		}
		if err := store.RemoveContainer(id); err != nil {
			errs = append(errs, fmt.Errorf("removing the container %s of a run that died: %w", id, err))
			continue
		}
		removed = append(removed, id)
	}
	return removed, errors.Join(errs...)
}

// sweepDeadRuns removes the containers of dead runs in the background; wait returns
// once it is done. A failure is a warning: the run does not depend on it.
func (b *Isolator) sweepDeadRuns(e engine) (wait func()) {
	store, ok := e.(markedStore)
	if !ok {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if _, err := removeDeadRuns(store, runmark.Where(), runmark.Dead); err != nil {
			b.warn("%v; `devsandbox sandboxes prune` removes it later", err)
		}
	}()
	return func() { <-done }
}

func (e *podman) MarkedRuns() (map[string]markedRun, error) {
	all := true
	l, err := containers.List(e.ctx, &containers.ListOptions{All: &all, Filters: map[string][]string{"label": {LabelRuntime, LabelRunMark}}})
	if err != nil {
		return nil, err
	}
	out := make(map[string]markedRun, len(l))
	for _, c := range l {
		if m := c.Labels[LabelRunMark]; m != "" && c.Labels[LabelRuntime] != "" {
			out[c.ID] = markedRun{Mark: m, Where: c.Labels[LabelRunWhere]}
		}
	}
	return out, nil
}
