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
	dockerhelper "github.com/devsandbox/devsandbox/isolator/docker/helper"
)

func (a *app) sandboxesCommand(jsonFlag cli.Flag) *cli.Command {
	return &cli.Command{
		Name:        "sandboxes",
		Usage:       "list and remove what devsandbox keeps per project",
		Description: describe("What devsandbox keeps per project: kept containers, home volumes, sandbox homes and state."),
		Subcommands: []*cli.Command{
			{Name: "list", Usage: "every project's kept container, volume and sandbox home, with sizes", Flags: []cli.Flag{jsonFlag}, Action: a.sandboxesList},
			{Name: "rm", Usage: "remove what devsandbox keeps for the named projects", ArgsUsage: "NAME...",
				Description: describe("Removes the kept container, the home volume, the sandbox home and the state of each named project (NAME as `sandboxes list` shows it)."), Action: a.sandboxesRm},
			{Name: "prune", Usage: "remove what belongs to projects gone or unused for --days", Flags: []cli.Flag{
				&cli.IntFlag{Name: "days", Value: 30, Usage: "remove sandboxes unused for `N` days"},
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
			Name:  "build",
			Usage: "build the default image (docker.image) from devsandbox's Dockerfile",
			Flags: []cli.Flag{
				&cli.StringFlag{Name: "base", Value: "debian:bookworm-slim", Usage: "base `IMAGE`, with /bin/sh (apt: git, ssh added)"},
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
		return dockerStub(l.cfg, nil), l.cfg, nil
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
	return dockerStub(cfg, nil), cfg, nil
}

// sandboxes lists what devsandbox keeps, from the host and the engine; lerr says why
// the engine was not asked, when it was not.
func (a *app) sandboxes(c *cli.Context) (d *dockerhelper.Stub, list []dockerhelper.Sandbox, lerr, err error) {
	d, cfg, err := a.docker(c)
	if err != nil {
		return nil, nil, nil, err
	}
	h := cfg.Host
	list, lerr = d.Sandboxes(context.Background(), dockerhelper.Dirs{Data: filepath.Join(h.DataHome, "devsandbox"), State: filepath.Join(h.StateHome, "devsandbox"), UID: h.UID})
	return d, list, lerr, nil
}

func (a *app) sandboxesList(c *cli.Context) error {
	_, list, lerr, err := a.sandboxes(c)
	if err != nil {
		return err
	}
	if lerr != nil {
		a.warn("the docker engine was not asked: %v", lerr)
	}
	if c.Bool("json") {
		enc := json.NewEncoder(a.stdout)
		enc.SetIndent("", "  ")
		if list == nil {
			list = []dockerhelper.Sandbox{}
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
	d, list, lerr, err := a.sandboxes(c)
	if err != nil {
		return err
	}
	byName := map[string]dockerhelper.Sandbox{}
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
	d, list, lerr, err := a.sandboxes(c)
	if err != nil {
		return err
	}
	if lerr != nil {
		return fmt.Errorf("the docker engine must answer for prune to know what is in use: %w", lerr)
	}
	maxAge := time.Duration(c.Int("days")) * 24 * time.Hour
	var errs []error
	for _, s := range list {
		why := dockerhelper.Prunable(s, time.Now(), maxAge)
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

// size is n bytes for people.
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
