package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/devsandbox/devsandbox/config"
	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/isolator/planner"
	"github.com/devsandbox/devsandbox/tools"
)

func (a *app) commands() []*cli.Command {
	jsonFlag := &cli.BoolFlag{Name: "json", Usage: "print JSON"}
	return []*cli.Command{
		{
			Name:        "doctor",
			Usage:       "check the host: what each isolator needs, and the fixes",
			Description: a.describe("One row per requirement, with its status and how to fix it. Exits 1 when the selected isolator cannot run."),
			Action:      a.doctor,
		},
		{
			Name:  "config",
			Usage: "inspect, validate, create and trust configuration",
			Subcommands: []*cli.Command{
				{Name: "show", Usage: "print the effective configuration with the origin of each value", Flags: []cli.Flag{jsonFlag}, Action: a.configShow},
				{Name: "validate", Usage: "check a config file; report the first error with file, line and key", ArgsUsage: "FILE", Action: a.configValidate},
				{Name: "init", Usage: "write a commented starter config file; never overwrites", ArgsUsage: "[FILE]",
					Description: a.describe("Writes FILE, by default the user config file ($XDG_CONFIG_HOME/devsandbox/config.toml). An existing file is left as it is."), Action: a.configInit},
				{Name: "trust", Usage: "trust this project's .devsandbox.toml as it is now (review it first)", Action: a.configTrust},
			},
		},
		{
			Name:        "tools",
			Usage:       "developer tools devsandbox knows",
			Subcommands: []*cli.Command{{Name: "list", Usage: "what was detected and what each tool binds", Flags: []cli.Flag{jsonFlag}, Action: a.toolsList}},
		},
		a.logsCommand(),
		a.sandboxesCommand(jsonFlag),
		a.imageCommand(),
		{
			Name:  "version",
			Usage: "print the version",
			Action: func(c *cli.Context) error {
				fmt.Fprintf(a.stdout, "devsandbox %s\n", config.Version)
				return nil
			},
		},
	}
}

// load reads the configuration of the working directory's project.
func (a *app) load(flags config.Flags) (*planner.Loaded, error) {
	return planner.Load(flags, a.environ, tools.Default())
}

func (a *app) configShow(c *cli.Context) error {
	l, err := a.load(a.flags(c))
	if err != nil {
		return err
	}
	for _, w := range l.Warnings {
		a.warn("%s", w)
	}
	if c.Bool("json") {
		return config.ShowJSON(l.Config, a.stdout)
	}
	if err := config.Show(l.Config, a.stdout); err != nil {
		return err
	}
	if len(l.Held) > 0 {
		fmt.Fprintln(a.stdout, "\n# Keys held outside the sandbox (tools.<name>.key = \"proxy\", in proxy.credentials above):")
		for _, k := range l.Held {
			fmt.Fprintf(a.stdout, "#   %s (%s): the proxy sets %s toward %s; the sandbox holds a placeholder\n", k.Env, k.Tool, k.Header, k.Host)
		}
	}
	return nil
}

func (a *app) configValidate(c *cli.Context) error {
	if c.Args().Len() != 1 {
		return usageError{errors.New("config validate needs exactly one FILE")}
	}
	host, err := config.HostFromEnviron(a.environ, -1, -1)
	if err != nil {
		return err
	}
	if err := planner.ValidateFile(c.Args().First(), host, tools.Default()); err != nil {
		return err
	}
	fmt.Fprintf(a.stdout, "%s: valid\n", c.Args().First())
	return nil
}

func (a *app) configInit(c *cli.Context) error {
	if c.Args().Len() > 1 {
		return usageError{errors.New("config init takes at most one FILE")}
	}
	host, err := config.HostFromEnviron(a.environ, -1, -1)
	if err != nil {
		return err
	}
	path := config.UserFile(host)
	if c.Args().Len() == 1 {
		path = c.Args().First()
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("creating %s: %w", filepath.Dir(path), err)
	}
	if err := config.WriteStarter(path); err != nil {
		return err
	}
	fmt.Fprintf(a.stdout, "wrote %s\n", path)
	return nil
}

func (a *app) configTrust(c *cli.Context) error {
	host, err := config.HostFromEnviron(a.environ, -1, -1)
	if err != nil {
		return err
	}
	cwd, err := os.Getwd()
	if err != nil {
		return err
	}
	proj, err := planner.FindProject(planner.OS(cwd), host.Home)
	if err != nil {
		return err
	}
	file := filepath.Join(proj.Dir, config.ProjectFileName)
	sum, err := config.Trust(host, file, time.Now(), func(c *config.Config) error { return planner.CheckTools(c, tools.Default()) })
	if err != nil {
		return err
	}
	fmt.Fprintf(a.stdout, "trusted %s (sha256 %s); it applies until it changes\n", file, sum[:12])
	return nil
}

func (a *app) toolsList(c *cli.Context) error {
	l, err := a.load(config.Flags{})
	if err != nil {
		return err
	}
	enabled := map[string]*bool{}
	for name, tc := range l.Config.Tools {
		enabled[name] = tc.Enabled
	}
	res := tools.Resolve(tools.Default(), planner.ToolHost(l.Config.Host, l.Probe, l.Project.Dir), enabled)
	if c.Bool("json") {
		enc := json.NewEncoder(a.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	return tools.WriteTable(a.stdout, res)
}

func (a *app) doctor(c *cli.Context) error {
	selected := "auto"
	var cfg *config.Config
	var keys []planner.KeyPlace
	if l, err := a.load(a.flags(c)); err == nil {
		selected, cfg = l.Config.Isolator, l.Config
		keys = planner.KeyPlaces(l.Config, tools.Default(), planner.ToolHost(l.Config.Host, l.Probe, l.Project.Dir))
	} else {
		// Outside a project (or with a broken config) the host checks still run.
		a.warn("%v", err)
	}
	rows, runs := a.isolatorTable(cfg, nil).Doctor(context.Background(), selected, autoOrder)
	w := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "CHECK\tSTATUS\tDETAIL")
	for _, r := range rows {
		detail := r.Detail
		if r.State != isolator.Active {
			detail = r.Reason + "; fix: " + r.Fix
		}
		fmt.Fprintf(w, "%s\t%s\t%s\n", r.Name, r.State, detail)
	}
	if len(keys) > 0 {
		fmt.Fprintln(w, "\nAPI KEY\tWHERE\tDETAIL")
		for _, k := range keys {
			fmt.Fprintf(w, "%s (%s)\t%s\t%s\n", k.Env, k.Tool, k.Where, k.Detail)
		}
	}
	if err := w.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(a.stdout, isolator.Verdict(selected, runs))
	if runs == "" {
		return exitError{1}
	}
	return nil
}
