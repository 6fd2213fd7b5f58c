package main

import (
	"github.com/urfave/cli/v2"

	"github.com/devsandbox/devsandbox/config"
)

// The docker backend links the Docker client, whose package initialisation costs every
// launch a few milliseconds. So on Linux the devsandbox binary has only bwrap, and
// hands runs, subcommands and doctor that need docker to devsandbox-docker, the same
// program built with the linkdocker tag (docker_link.go), which it execs in place
// (same pid, same stdio). Elsewhere (macOS) there is no bwrap and one binary has both.

// dockerSettings is what the docker backend takes from the configuration.
type dockerSettings struct {
	cfg   config.Docker
	env   map[string]string
	home  string
	warn  func(string)
	phase func(string)
}

func (a *app) dockerSettings(cfg *config.Config) *dockerSettings {
	return &dockerSettings{
		cfg:  cfg.Docker,
		env:  cfg.Host.Vars,
		home: cfg.Host.Home,
		warn: func(m string) { a.warn("%s", m) },
	}
}

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
