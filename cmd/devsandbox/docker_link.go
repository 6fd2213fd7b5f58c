//go:build linkdocker || !linux

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/devsandbox/devsandbox/config"
	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/isolator/docker"
)

func newDocker(dk *dockerSettings) isolator.Isolator {
	d := &docker.Isolator{Options: docker.Options{Version: config.Version}}
	if dk == nil {
		return d
	}
	d.Options.Image, d.Options.Home, d.Options.Keep = dk.cfg.Image, dk.cfg.Home, dk.cfg.KeepContainer
	d.HostAddr, d.Env, d.HostHome = dk.cfg.Host, dk.env, dk.home
	d.Warn, d.Phase = dk.warn, dk.phase
	// DEVSANDBOX_NFT: the test override bwrap's egressBinaries also takes; here the
	// program the firewall helper runs in the image instead of devsandbox-init.
	if v := dk.env["DEVSANDBOX_NFT"]; filepath.IsAbs(v) {
		d.FirewallTool = v
	}
	return d
}

// earlyDispatch has nothing to do: this binary has the docker backend.
func (a *app) earlyDispatch([]string) {}

// dispatchDocker has nothing to do: this binary has the docker backend.
func (a *app) dispatchDocker(*config.Config, *dockerSettings) error { return nil }

func (a *app) doctorHandOff() {}

// loadDockerSettings is dockerSettings for a subcommand: from the project's
// configuration when the working directory is in one, else from the user's alone.
func (a *app) loadDockerSettings(c *cli.Context) (*dockerSettings, *config.Config, error) {
	if l, err := a.load(a.flags(c)); err == nil {
		return a.dockerSettings(l.cfg), l.cfg, nil
	}
	host, err := config.HostFromEnviron(a.environ, -1, -1)
	if err != nil {
		return nil, nil, err
	}
	cfg, warns, err := config.Load(config.LoadOptions{Flags: a.flags(c), Environ: a.environ, UID: host.UID, GID: host.GID})
	if err != nil {
		return nil, nil, err
	}
	for _, w := range warns {
		a.warn("%s", w)
	}
	return a.dockerSettings(cfg), cfg, nil
}

func (a *app) dockerBackend(c *cli.Context) (*docker.Isolator, *config.Config, error) {
	dk, cfg, err := a.loadDockerSettings(c)
	if err != nil {
		return nil, nil, err
	}
	return newDocker(dk).(*docker.Isolator), cfg, nil
}

func dirs(cfg *config.Config) docker.Dirs {
	return docker.Dirs{Data: filepath.Join(cfg.Host.DataHome, "devsandbox"), State: filepath.Join(cfg.Host.StateHome, "devsandbox"), UID: cfg.Host.UID}
}

func (a *app) sandboxesList(c *cli.Context) error {
	d, cfg, err := a.dockerBackend(c)
	if err != nil {
		return err
	}
	list, lerr := d.Sandboxes(context.Background(), dirs(cfg))
	if lerr != nil {
		a.warn("the docker engine was not asked: %v", lerr)
	}
	if c.Bool("json") {
		enc := json.NewEncoder(a.stdout)
		enc.SetIndent("", "  ")
		if list == nil {
			list = []docker.Sandbox{}
		}
		return enc.Encode(list)
	}
	w := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "NAME\tPROJECT\tCONTAINER\tVOLUME\tHOME\tLAST USED")
	for _, s := range list {
		proj := s.Dir
		if proj == "" {
			proj = "?"
		} else if !s.DirExists {
			proj += " (gone)"
		}
		ctr := "-"
		if len(s.Containers) > 0 {
			ctr = fmt.Sprintf("%s %s", s.Containers[0], size(s.ContainerSize))
			if s.Running {
				ctr += " running"
			}
		}
		vol := "-"
		if len(s.Volumes) > 0 {
			vol = s.Volumes[0]
		}
		home := "-"
		if s.Home != "" {
			home = size(s.HomeSize)
		}
		last := "-"
		if !s.LastUsed.IsZero() {
			last = s.LastUsed.Format(time.DateTime)
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", s.Name, proj, ctr, vol, home, last)
	}
	return w.Flush()
}

func (a *app) sandboxesRm(c *cli.Context) error {
	if c.Args().Len() == 0 {
		return usageError{errors.New("sandboxes rm needs at least one NAME (see devsandbox sandboxes list)")}
	}
	d, cfg, err := a.dockerBackend(c)
	if err != nil {
		return err
	}
	list, lerr := d.Sandboxes(context.Background(), dirs(cfg))
	byName := map[string]docker.Sandbox{}
	for _, s := range list {
		byName[s.Name] = s
	}
	var errs []error
	for _, n := range c.Args().Slice() {
		s, ok := byName[n]
		if !ok {
			errs = append(errs, fmt.Errorf("no sandbox named %s", n))
			continue
		}
		if len(s.Containers) == 0 && lerr != nil {
			a.warn("the docker engine was not asked (%v); only the host side of %s is removed", lerr, n)
		}
		if err := d.RemoveSandbox(context.Background(), s); err != nil {
			errs = append(errs, err)
			continue
		}
		fmt.Fprintf(a.stdout, "removed %s\n", n)
	}
	return errors.Join(errs...)
}

func (a *app) sandboxesPrune(c *cli.Context) error {
	d, cfg, err := a.dockerBackend(c)
	if err != nil {
		return err
	}
	list, lerr := d.Sandboxes(context.Background(), dirs(cfg))
	if lerr != nil {
		return fmt.Errorf("the docker engine must answer for prune to know what is in use: %w", lerr)
	}
	maxAge := time.Duration(c.Int("days")) * 24 * time.Hour
	var errs []error
	for _, s := range list {
		why := docker.Prunable(s, time.Now(), maxAge)
		if why == "" {
			continue
		}
		if c.Bool("dry-run") {
			fmt.Fprintf(a.stdout, "would remove %s: %s\n", s.Name, why)
			continue
		}
		if err := d.RemoveSandbox(context.Background(), s); err != nil {
			errs = append(errs, err)
			continue
		}
		fmt.Fprintf(a.stdout, "removed %s: %s\n", s.Name, why)
	}
	return errors.Join(errs...)
}

func (a *app) imageBuild(c *cli.Context) error {
	d, cfg, err := a.dockerBackend(c)
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

func size(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1fG", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1fM", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1fK", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%dB", n)
}
