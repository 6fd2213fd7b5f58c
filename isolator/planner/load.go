package planner

import (
	"fmt"
	"os"

	"github.com/devsandbox/devsandbox/config"
	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/tools"
)

// Loaded is the configuration of the working directory's project, ready for Build.
type Loaded struct {
	Config  *config.Config // with the keys the proxy holds as proxy credentials (ToolKeys)
	Project isolator.Project
	// Probe holds /etc/passwd as FindProject read it: the Builds from it use those
	// bytes (a program keeping a Loaded for long loads again to see a changed file).
	Probe Probe
	Held  []HeldKey
	// System is the default system view being worked out ahead (nil when the
	// configuration runs no bwrap or asks for another view); the first Build from
	// Probe takes it. A bwrap run may open its /etc snapshot ahead too
	// (bwrap.EtcAhead, through SystemHead.Then).
	System *SystemHead
	// Warnings are for people: the configuration's and the tool keys'.
	Warnings []string
}

// Load finds the project of the working directory and reads its configuration
// layers (flags over the files, environ the process's environment), with the tool
// keys the proxy holds resolved against reg.
func Load(flags config.Flags, environ []string, reg *tools.Registry) (*Loaded, error) {
	cwd, err := os.Getwd()
	if err != nil {
		return nil, fmt.Errorf("finding the working directory: %w", err)
	}
	return LoadDir(cwd, flags, environ, reg)
}

// LoadDir is Load for the project of dir, an absolute path, instead of the process's
// working directory (a program running sandboxes for several projects at once); the
// Probe's Cwd is dir.
func LoadDir(dir string, flags config.Flags, environ []string, reg *tools.Registry) (*Loaded, error) {
	host, err := config.HostFromEnviron(environ, -1, -1)
	if err != nil {
		return nil, err
	}
	// /etc/passwd is read once for the project's check here and Build's uses of it.
	probe := withPasswdOnce(OS(dir))
	proj, err := FindProject(probe, host)
	if err != nil {
		return nil, err
	}
	// The default system view is worked out on another goroutine from here, while
	// the files are read and the caller goes on to Build, which uses it (the Probe
	// carries it): only when the flags and the environment leave bwrap possible, and
	// handed on only when the configuration still does (a run on another backend, or
	// with a view of its own, leaves it unused; it only reads).
	head := startAhead(flags, host, probe)
	cfg, warns, err := config.Load(config.LoadOptions{ProjectDir: proj.Dir, Flags: flags, Environ: environ, UID: host.UID, GID: host.GID,
		Writable: configWritable(reg, probe, proj.Dir)})
	if err != nil {
		return nil, err
	}
	th := ToolHost(cfg.Host, probe, proj.Dir)
	th.Command = flags.Command
	keyed, held, kwarns, err := ToolKeys(cfg, reg, th)
	if err != nil {
		return nil, err
	}
	if aheadFits(keyed) {
		probe.head = head
	}
	return &Loaded{Config: keyed, Project: proj, Probe: probe, System: probe.head, Held: held, Warnings: append(warns, kwarns...)}, nil
}

// LoadUser reads the configuration outside any project: the user's file (or flags'
// --config) and flags, for the subcommands that work anywhere. A --config file a
// sandbox can write needs trust as in a run (reg's tools are probed from the working
// directory).
func LoadUser(flags config.Flags, environ []string, reg *tools.Registry) (*config.Config, []string, error) {
	host, err := config.HostFromEnviron(environ, -1, -1)
	if err != nil {
		return nil, nil, err
	}
	cwd, err := os.Getwd()
	if err != nil {
		return nil, nil, fmt.Errorf("finding the working directory: %w", err)
	}
	return config.Load(config.LoadOptions{Flags: flags, Environ: environ, UID: host.UID, GID: host.GID, Writable: configWritable(reg, OS(cwd), "")})
}
