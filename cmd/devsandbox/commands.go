package main

import (
	"bytes"
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
	"github.com/devsandbox/devsandbox/internal/buildstamp"
	"github.com/devsandbox/devsandbox/internal/termsafe"
	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/isolator/diskguard"
	dockerhelper "github.com/devsandbox/devsandbox/isolator/docker/helper"
	krunhelper "github.com/devsandbox/devsandbox/isolator/krun/helper"
	"github.com/devsandbox/devsandbox/isolator/planner"
	proxyservice "github.com/devsandbox/devsandbox/proxy/service"
	"github.com/devsandbox/devsandbox/tools"
)

func (a *app) commands() []*cli.Command {
	jsonFlag := &cli.BoolFlag{Name: "json", Usage: "print JSON"}
	return []*cli.Command{
		{
			Name:        "doctor",
			Usage:       "check the host: what each isolator needs, and the fixes",
			Description: a.describe("One row per requirement, with its status and how to fix it, judged by the configuration a run from here reads: the project's, or outside a project the user's (so the docker row names the engine a run would use: docker.host, else DOCKER_HOST, else the docker context, and how it is reached: a Unix socket, TCP with TLS verified, or plain TCP, which is warned of: a run that would send a secret, or a project file holding a credential (.git/config with a token in a remote URL), to a plain-TCP engine on another machine is refused). Exits 1 when the selected isolator cannot run, when that configuration does not load, or when a run from here would stop before it starts (a configured path missing on this host, say: the warning says what, as the run would)."),
			Action:      a.doctor,
		},
		{
			Name:  "config",
			Usage: "inspect, validate, create and trust configuration",
			Subcommands: []*cli.Command{
				{Name: "show", Usage: "print the effective configuration with the origin of each value", Flags: []cli.Flag{jsonFlag}, Action: a.configShow},
				{Name: "validate", Usage: "check a config file; report its errors with file, line and key", ArgsUsage: "FILE",
					Description: a.describe("Checks FILE on its own, over the defaults, with the checks a run makes on the configuration (what depends on the host, such as paths that must exist, is left to the run). Reports the first error, or every unknown key, with its file, line and key, and exits 125; so does a FILE that a run from here with --config FILE would refuse until trusted (a sandbox can write it). Prints \"FILE: valid\" otherwise."), Action: a.configValidate},
				{Name: "init", Usage: "write a commented starter config file; never overwrites", ArgsUsage: "[FILE]",
					Description: a.describe("Writes FILE, by default the user config file ($XDG_CONFIG_HOME/devsandbox/config.toml). An existing file is left as it is, and init exits 125 naming it."), Action: a.configInit},
				{Name: "trust", Usage: "trust the project file or a --config FILE a sandbox can write", ArgsUsage: "[FILE]",
					Description: a.describe("Without FILE, trusts the project's .devsandbox.toml. With FILE, trusts a --config file that lies where a sandbox can write it (the project; what the configuration a run loads binds read-write: sandbox.rw_binds, read-write sandbox.host_mounts and --mount, a tool's shared state; devsandbox's data and state; another project devsandbox has run), checked as a --config file: such a file applies only while its content is the one trusted, and once trusted it is held to that content wherever it lies. The project file given as FILE is trusted for both uses; as the project file, its rules still apply on every run."), Action: a.configTrust},
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
		var b bytes.Buffer
		if err := config.ShowJSON(l.Config, &b); err != nil {
			return err
		}
		_, err := a.stdout.Write(termsafe.JSON(b.Bytes()))
		return err
	}
	if err := config.Show(l.Config, a.stdout); err != nil {
		return err
	}
	if len(l.Held) > 0 {
		fmt.Fprintln(a.stdout, "\n# Keys held outside the sandbox (tools.<name>.key = \"proxy\", in proxy.credentials above):")
		for _, k := range l.Held {
			fmt.Fprintf(a.stdout, "#   %s (%s): the proxy sets %s toward %s; the sandbox holds a placeholder\n", termsafe.Line(k.Env), termsafe.Line(k.Tool), termsafe.Line(k.Header), termsafe.Line(k.Host))
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
	if err := a.explicitTrust(c.Args().First()); err != nil {
		return err
	}
	fmt.Fprintf(a.stdout, "%s: valid\n", termsafe.Line(c.Args().First()))
	return nil
}

// explicitTrust is what a run from the working directory with `--config file` says
// of the file's trust (a sandbox can write it, and it is untrusted or changed), or
// nil: `config validate` says it too. Outside a project, the subcommands' load does.
func (a *app) explicitTrust(file string) error {
	flags := config.Flags{ConfigFile: file}
	_, err := a.load(flags)
	if errors.Is(err, planner.ErrProject) {
		_, _, err = planner.LoadUser(flags, a.environ, tools.Default())
	}
	var ce *config.Error
	if (errors.Is(err, config.ErrUntrustedConfigFile) || errors.Is(err, config.ErrUntrustedChange)) && errors.As(err, &ce) && ce.File == file {
		return err
	}
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
	fmt.Fprintf(a.stdout, "wrote %s\n", termsafe.Line(path))
	return nil
}

func (a *app) configTrust(c *cli.Context) error {
	if c.Args().Len() > 1 {
		return usageError{errors.New("config trust takes at most one FILE")}
	}
	host, err := config.HostFromEnviron(a.environ, -1, -1)
	if err != nil {
		return err
	}
	cwd, err := os.Getwd()
	if err != nil {
		return err
	}
	proj, err := planner.FindProject(planner.OS(cwd), host)
	if err != nil {
		return err
	}
	file := filepath.Join(proj.Dir, config.ProjectFileName)
	check := func(c *config.Config) error { return planner.CheckTools(c, tools.Default()) }
	var sum string
	if c.Args().Len() == 1 {
		file = c.Args().First()
		sum, err = config.TrustConfigFile(host, file, time.Now(), check)
	} else {
		// A trusted project file that is gone stops every run until it is restored or
		// forgotten: forgotten here, since the user asks to trust the project as it is.
		if ok, at, err := config.ForgetGone(host, file); ok {
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "forgot %s (trusted %s): it is gone; the project runs without a project file\n", termsafe.Line(file), at.Format(time.RFC3339))
			return nil
		}
		sum, err = config.Trust(host, file, time.Now(), check)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(a.stdout, "trusted %s (sha256 %s); it applies until it changes\n", termsafe.Line(file), sum[:12])
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
		return a.writeJSON(res)
	}
	return tools.WriteTable(a.stdout, res)
}

func (a *app) doctor(c *cli.Context) error {
	cfg, keys, planned, broken, planErr, err := a.doctorConfig(a.flags(c))
	if err != nil {
		return err
	}
	a.planned = planned
	selected := cfg.Isolator
	rows, runs := a.isolatorTable(cfg, nil).Doctor(context.Background(), selected, autoOrder)
	// The reserve a run keeps (sandbox.disk_reserve), on what that run would watch.
	var watched []string
	if planned != nil {
		watched = diskguard.Watched(planned)
	}
	rows = append(rows, helperRow())
	rows = append(rows, a.earlyRows(cfg)...)
	rows = append(rows, diskguard.Rows(uint64(cfg.Sandbox.DiskReserveBytes()), watched, diskguard.HostFree)...)
	w := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "CHECK\tSTATUS\tDETAIL")
	for _, r := range rows {
		detail := r.Detail
		if r.State != isolator.Active {
			detail = r.Reason + "; fix: " + r.Fix
		}
		fmt.Fprintf(w, "%s\t%s\t%s\n", termsafe.Line(r.Name), r.State, termsafe.Line(detail))
	}
	if len(keys) > 0 {
		fmt.Fprintln(w, "\nAPI KEY\tWHERE\tDETAIL")
		for _, k := range keys {
			fmt.Fprintf(w, "%s (%s)\t%s\t%s\n", termsafe.Line(k.Env), termsafe.Line(k.Tool), termsafe.Line(k.Where), termsafe.Line(k.Detail))
		}
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if broken {
		fmt.Fprintln(a.stdout, brokenVerdict)
		return exitError{1}
	}
	fmt.Fprintln(a.stdout, termsafe.Line(isolator.Verdict(selected, runs)))
	if planErr != nil {
		fmt.Fprintln(a.stdout, stopsVerdict)
		return exitError{1}
	}
	if runs == "" {
		return exitError{1}
	}
	return nil
}

// helperRow is doctor's row on the helper binaries installed beside devsandbox: each
// must come from its build (buildstamp).
func helperRow() isolator.Check {
	exe, err := os.Executable()
	if err != nil {
		return isolator.Check{Name: "helper binaries", Status: isolator.Status{State: isolator.Unavailable, Reason: err.Error(), Fix: "reinstall devsandbox (make install)"}}
	}
	return buildstamp.Row(filepath.Dir(exe), helperNames)
}

// helperNames are the helper binaries devsandbox runs from beside itself.
var helperNames = []string{planner.BwrapInitBinary, planner.InitBinary, proxyservice.Program, dockerhelper.Program, krunhelper.Program}

// brokenVerdict is doctor's last line when the configuration a run would read does
// not load (the warning above it says why): no isolator runs anything until it is
// fixed.
const brokenVerdict = "selected isolator: unknown — the configuration does not load (see the warning above); no run starts until it is fixed"

// stopsVerdict is doctor's last line when the configuration loads but the Plan a run
// from here gets does not build (a configured path missing on this host, a
// protection that cannot be applied): the isolator could run, the run stops first.
const stopsVerdict = "but a run from here stops before it starts (see the warning above), until that is fixed"

// doctorConfig is the configuration doctor judges the host by: the one a run from
// the working directory reads, the project's. Outside a project it is the user's
// alone (the user file or --config, DEVSANDBOX_ISOLATOR, the flags), as `sandboxes`
// reads it, so the engine address (docker.host, else DOCKER_HOST, else the docker
// context), the images and the krun settings are still a run's. When the
// configuration does not load, its error is warned and broken is true; cfg is then
// the user's alone if that loads, else the built-in defaults over the host's
// environment, so the rows still judge the address the environment names (an
// ssh:// DOCKER_HOST or context is refused in a launch's words). err is for an
// environment devsandbox cannot read at all. planned is the Plan a run from here
// would get, built as --dry-run builds it (it writes nothing), for the rows that
// estimate a launch; nil outside a project, or when it does not build: planErr is
// then why, warned as the run would say it (a run, and --dry-run, stop on it).
func (a *app) doctorConfig(flags config.Flags) (cfg *config.Config, keys []planner.KeyPlace, planned *isolator.Plan, broken bool, planErr, err error) {
	l, lerr := a.load(flags)
	if lerr == nil {
		keys = planner.KeyPlaces(l.Config, tools.Default(), planner.ToolHost(l.Config.Host, l.Probe, l.Project.Dir))
		p, _, perr := a.plan(l, true)
		if perr != nil {
			a.warn("a run from here would stop: %v", perr)
			return l.Config, keys, nil, false, perr, nil
		}
		return l.Config, keys, p, false, nil, nil
	}
	// Load's ErrProject is FindProject's: no project here, which doctor needs none
	// of. Any other error is the configuration's: a run would stop on it.
	broken = !errors.Is(lerr, planner.ErrProject)
	a.warn("%v", lerr)
	u, warns, uerr := planner.LoadUser(flags, a.environ, tools.Default())
	if uerr == nil {
		for _, w := range warns {
			a.warn("%s", w)
		}
		return u, nil, nil, broken, nil, nil
	}
	if uerr.Error() != lerr.Error() {
		a.warn("%v", uerr)
	}
	host, err := config.HostFromEnviron(a.environ, -1, -1)
	if err != nil {
		return nil, nil, nil, true, nil, err
	}
	return config.Defaults(host), nil, nil, true, nil, nil
}

// writeJSON writes v as indented JSON, with the characters a terminal acts on that
// encoding/json leaves as they are (C1 controls, bidi overrides, zero-width
// characters) escaped too (termsafe.JSON): names in it may be a sandbox's.
func (a *app) writeJSON(v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = a.stdout.Write(append(termsafe.JSON(b), '\n'))
	return err
}
