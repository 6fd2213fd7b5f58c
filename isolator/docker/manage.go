package docker

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
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
			if e.IsDir() && strings.Contains(e.Name(), "-") {
				get(e.Name())
			}
		}
	}
	engineErr := b.listEngine(ctx, d.UID, get)
	var out []Sandbox
	for _, s := range byName {
		home := filepath.Join(d.Data, s.Name)
		if fi, err := os.Stat(home); err == nil && fi.IsDir() {
			s.Home, s.HomeSize = home, dirSize(home)
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
			s.State, s.StateSize = state, dirSize(state)
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

func (b *Isolator) listEngine(ctx context.Context, uid int, get func(string) *Sandbox) error {
	mine := filters.NewArgs(filters.Arg("label", LabelProject), filters.Arg("label", LabelUser+"="+fmt.Sprint(uid)))
	e, a, err := b.engine()
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
		e, _, err := b.engine()
		if err != nil {
			return err
		}
		defer e.Close()
		for _, c := range s.Containers {
			if err := e.ContainerRemove(ctx, c, dockercontainer.RemoveOptions{Force: true, RemoveVolumes: true}); err != nil && !cerrdefs.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("removing container %s: %w", c, err))
			}
		}
		for _, v := range s.Volumes {
			if err := e.VolumeRemove(ctx, v, true); err != nil && !cerrdefs.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("removing volume %s: %w", v, err))
			}
		}
	}
	for _, d := range []string{s.Home, s.State} {
		if d == "" {
			continue
		}
		// The home is what the sandbox wrote: rmtree also removes directories it
		// locked (mode 000), which os.RemoveAll cannot.
		if err := rmtree.RemoveAll(d); err != nil {
			errs = append(errs, fmt.Errorf("removing %s: %w", d, err))
		}
	}
	return errors.Join(errs...)
}

func dirSize(root string) int64 {
	var n int64
	_ = filepath.WalkDir(root, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
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
