package docker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	dockercontainer "github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/volume"

	"github.com/devsandbox/devsandbox/internal/rmtree"
	"github.com/devsandbox/devsandbox/isolator/docker/helper"
)

// Sandbox and Dirs are package helper's (devsandbox prints them).
type (
	Sandbox = helper.Sandbox
	Dirs    = helper.Dirs
)

// Sandboxes lists every project devsandbox keeps something for, sorted by name. With
// no engine reachable, the host side is still listed (and an error returned too).
func (b *Isolator) Sandboxes(ctx context.Context, d Dirs) ([]Sandbox, error) {
	byName := map[string]*Sandbox{}
	get := func(name string) *Sandbox {
		s, ok := byName[name]
		if !ok {
			s = &Sandbox{Name: name}
			byName[name] = s
		}
		return s
	}
	for _, base := range []string{d.Data, d.State} {
		ents, _ := os.ReadDir(base)
		for _, e := range ents {
			if e.IsDir() && isProjectDirName(e.Name()) {
				get(e.Name())
			}
		}
	}
	engineErr := b.listEngine(ctx, d.UID, get)
	var out []Sandbox
	for _, s := range byName {
		home := filepath.Join(d.Data, s.Name)
		if fi, err := os.Stat(home); err == nil && fi.IsDir() {
			sz := dirSize(home)
			s.Home, s.HomeSize, s.HomeSizeStop, s.HomeSizeBound = home, sz.bytes, sz.stopped, sz.stopped != ""
			s.LastUsed = later(s.LastUsed, fi.ModTime())
			if fi, err := os.Stat(filepath.Join(home, "home")); err == nil {
				s.LastUsed = later(s.LastUsed, fi.ModTime())
			}
			if s.Dir == "" {
				if b, err := os.ReadFile(filepath.Join(home, "project")); err == nil {
					s.Dir = strings.TrimSpace(string(b))
				}
			}
		}
		state := filepath.Join(d.State, s.Name)
		if fi, err := os.Stat(state); err == nil && fi.IsDir() {
			sz := dirSize(state)
			s.State, s.StateSize, s.StateSizeStop, s.StateSizeBound = state, sz.bytes, sz.stopped, sz.stopped != ""
			for _, f := range []string{"docker.lock", "tmp"} {
				if fi, err := os.Stat(filepath.Join(state, f)); err == nil {
					s.LastUsed = later(s.LastUsed, fi.ModTime())
				}
			}
		}
		if s.Dir != "" {
			_, err := os.Stat(s.Dir)
			s.DirExists = err == nil
		}
		out = append(out, *s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, engineErr
}

// isProjectDirName reports whether name, a directory in devsandbox's data or state
// root, is a project's: <basename>-<id>, the id 8 lowercase hex digits (the
// planner's projectName). The state root holds devsandbox's own directories beside
// the projects' (image-use, krun-image-env, prestart, locks, etc): a dash alone took
// image-use for a sandbox, which `sandboxes rm image-use` then removed with the
// image-use records prune decides by.
func isProjectDirName(name string) bool {
	i := strings.LastIndexByte(name, '-')
	if i <= 0 || len(name)-i-1 != 8 {
		return false
	}
	for _, c := range name[i+1:] {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

func (b *Isolator) listEngine(ctx context.Context, uid int, get func(string) *Sandbox) error {
	mine := filters.NewArgs(filters.Arg("label", LabelProject), filters.Arg("label", LabelUser+"="+fmt.Sprint(uid)))
	e, a, err := b.engine(ctx)
	if err != nil {
		return err
	}
	defer e.Close()
	cs, err := e.ContainerList(ctx, dockercontainer.ListOptions{All: true, Size: true, Filters: mine})
	if err != nil {
		st := engineDown(a, err)
		return fmt.Errorf("%s; %s", st.Reason, st.Fix)
	}
	for _, c := range cs {
		name := c.Labels[LabelName]
		if name == "" {
			continue
		}
		s := get(name)
		if s.Dir == "" {
			s.Dir = c.Labels[LabelDir]
		}
		cn := strings.TrimPrefix(firstOr(c.Names, c.ID), "/")
		s.Containers = append(s.Containers, cn)
		s.ContainerSize += c.SizeRw
		s.Running = s.Running || c.State == "running"
		s.LastUsed = later(s.LastUsed, time.Unix(c.Created, 0))
	}
	vs, err := e.VolumeList(ctx, volume.ListOptions{Filters: mine})
	if err != nil {
		return fmt.Errorf("listing volumes: %w", err)
	}
	for _, v := range vs.Volumes {
		if name := v.Labels[LabelName]; name != "" {
			s := get(name)
			s.Volumes = append(s.Volumes, v.Name)
			if s.Dir == "" {
				s.Dir = v.Labels[LabelDir]
			}
		}
	}
	return nil
}

// RemoveSandbox removes everything s lists: containers (running or not), volumes,
// the sandbox home and the state directory.
func (b *Isolator) RemoveSandbox(ctx context.Context, s Sandbox) error {
	var errs []error
	if len(s.Containers) > 0 || len(s.Volumes) > 0 {
		e, _, err := b.engine(ctx)
		if err != nil {
			return err
		}
		defer e.Close()
		for _, c := range s.Containers {
			if err := removeContainer(ctx, e, c); err != nil {
				errs = append(errs, fmt.Errorf("removing container %s: %w", c, err))
			}
		}
		for _, v := range s.Volumes {
			if err := removeVolumeSoon(ctx, e, v); err != nil {
				errs = append(errs, fmt.Errorf("removing volume %s: %w", v, err))
			}
		}
	}
	for _, d := range []string{s.Home, s.State} {
		if d == "" {
			continue
		}
		// The home is what the sandbox wrote: rmtree also removes directories it
		// locked (mode 000), which os.RemoveAll cannot; and what the engine made in
		// it is handed back first (giveback.go).
		remove := rmtree.RemoveAll
		if d == s.Home {
			remove = func(d string) error { return b.removeHome(ctx, d) }
		}
		if err := remove(d); err != nil {
			errs = append(errs, fmt.Errorf("removing %s: %w", d, err))
		}
	}
	return errors.Join(errs...)
}

// removeBound is how long RemoveSandbox waits for a removal someone else has started
// (a session of the project ending meanwhile: its companion, its endpoint volume).
const removeBound = 20 * time.Second

// removeContainer removes the container c. When the engine is already removing it (a
// session's own end, racing with sandboxes rm), it waits until that removal is done,
// up to removeBound.
func removeContainer(ctx context.Context, e Engine, c string) error {
	err := e.ContainerRemove(ctx, c, dockercontainer.RemoveOptions{Force: true, RemoveVolumes: true})
	if err == nil || cerrdefs.IsNotFound(err) {
		return nil
	}
	if !strings.Contains(err.Error(), "already in progress") {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, removeBound)
	defer cancel()
	okc, errc := e.ContainerWait(wctx, c, dockercontainer.WaitConditionRemoved)
	select {
	case <-okc:
		return nil
	case werr := <-errc:
		if cerrdefs.IsNotFound(werr) {
			return nil
		}
		return fmt.Errorf("%w; waiting for the removal already in progress: %w", err, werr)
	}
}

// removeVolumeSoon removes the volume v. A volume still in use by a container the
// engine is removing (a session's end racing with sandboxes rm) is tried again until
// removeBound has passed.
func removeVolumeSoon(ctx context.Context, e Engine, v string) error {
	deadline := time.Now().Add(removeBound)
	for {
		err := e.VolumeRemove(ctx, v, true)
		if err == nil || cerrdefs.IsNotFound(err) {
			return nil
		}
		if !cerrdefs.IsConflict(err) && !strings.Contains(err.Error(), "in use") || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// later is the later of a and b, leaving out a b over a minute after now: the
// sandbox can set its home's modification time, and one in the future would make
// the project look used until then, so `sandboxes prune` would never remove it.
func later(a, b time.Time) time.Time {
	if b.After(a) && !b.After(time.Now().Add(time.Minute)) {
		return b
	}
	return a
}

func firstOr(s []string, def string) string {
	if len(s) > 0 {
		return s[0]
	}
	return def
}
