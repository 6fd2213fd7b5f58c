//go:build linux && !linkdocker

package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/urfave/cli/v2"

	"github.com/devsandbox/devsandbox/config"
	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/isolator/bwrap"
	"github.com/devsandbox/devsandbox/isolator/docker/engineaddr"
)

// dockerHelper is the name of the binary with the docker backend, next to devsandbox.
const dockerHelper = "devsandbox-docker"

// helperPath returns devsandbox-docker next to this binary, or "".
func helperPath() string {
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	if r, err := filepath.EvalSymlinks(exe); err == nil {
		exe = r
	}
	p := filepath.Join(filepath.Dir(exe), dockerHelper)
	if _, err := os.Stat(p); err != nil {
		return ""
	}
	return p
}

// handOff execs devsandbox-docker with this process's arguments; it returns only on
// failure.
func (a *app) handOff() error {
	p := helperPath()
	if p == "" {
		return fmt.Errorf("%w: the docker isolator is in %s, which is not installed next to devsandbox; install it (make install)", isolator.ErrUnavailable, dockerHelper)
	}
	err := syscall.Exec(p, append([]string{p}, a.args...), a.environ)
	return fmt.Errorf("starting %s: %w", p, err)
}

// earlyDispatch hands the process to devsandbox-docker before any configuration is
// read when the command line or DEVSANDBOX_ISOLATOR names docker, or a docker-only
// subcommand is asked for: devsandbox-docker is the same program and does all of it
// again, so reading anything here would only be paid twice.
func (a *app) earlyDispatch(args []string) {
	flags, sub, _ := splitArgs(args)
	if len(sub) > 0 {
		if sub[0] == "sandboxes" || sub[0] == "image" {
			_ = a.handOff()
		}
		return
	}
	iso := ""
	for i, f := range flags {
		switch {
		case f == "--isolator" && i+1 < len(flags):
			iso = flags[i+1]
		case strings.HasPrefix(f, "--isolator="):
			iso = strings.TrimPrefix(f, "--isolator=")
		}
	}
	if iso == "" {
		for _, kv := range a.environ {
			if v, ok := strings.CutPrefix(kv, "DEVSANDBOX_ISOLATOR="); ok {
				iso = v
			}
		}
	}
	if iso == "docker" && helperPath() != "" {
		_ = a.handOff()
	}
}

// dispatchDocker hands the run to devsandbox-docker when docker is the isolator:
// configured, or chosen by auto because bwrap cannot run here.
func (a *app) dispatchDocker(cfg *config.Config, dk *dockerSettings) error {
	switch cfg.Isolator {
	case "docker":
		return a.handOff()
	case "auto":
		if (&bwrap.Isolator{}).QuickCheck().State != isolator.Active && newDocker(dk).(isolator.Quick).QuickCheck().State == isolator.Active {
			return a.handOff()
		}
	}
	return nil
}

// dockerStub stands for the docker backend in this binary: it tells cheaply whether
// docker could run; the run itself happens in devsandbox-docker.
type dockerStub struct{ dk *dockerSettings }

func newDocker(dk *dockerSettings) isolator.Isolator { return &dockerStub{dk: dk} }

func (*dockerStub) Name() string { return "docker" }

func (d *dockerStub) QuickCheck() isolator.Status {
	if helperPath() == "" {
		return isolator.Status{State: isolator.Unavailable, Reason: dockerHelper + " is not installed next to devsandbox", Fix: "install it (make install)"}
	}
	var cfgHost, home string
	var env map[string]string
	if d.dk != nil {
		cfgHost, env, home = d.dk.cfg.Host, d.dk.env, d.dk.home
	}
	a, err := engineaddr.Resolve(cfgHost, env, home)
	if err != nil {
		return isolator.Status{State: isolator.Unavailable, Reason: err.Error(), Fix: "fix the docker context or set docker.host"}
	}
	if sock, ok := strings.CutPrefix(a.Host, "unix://"); ok {
		if _, err := os.Stat(sock); err != nil {
			return isolator.Status{State: isolator.Unavailable, Reason: fmt.Sprintf("no docker engine at %s (%s)", a.Host, a.Origin), Fix: "start Docker, or set docker.host / DOCKER_HOST"}
		}
	}
	return isolator.Status{State: isolator.Active}
}

func (d *dockerStub) Check(context.Context) isolator.Status { return d.QuickCheck() }

var errNotHere = errors.New("the docker isolator runs in " + dockerHelper)

func (d *dockerStub) Render(*isolator.Plan) (isolator.Rendered, error) { return nil, errNotHere }

func (d *dockerStub) Run(context.Context, *isolator.Plan, isolator.Stdio) (int, error) {
	return 0, errNotHere
}

func (a *app) sandboxesList(*cli.Context) error  { return a.handOff() }
func (a *app) sandboxesRm(*cli.Context) error    { return a.handOff() }
func (a *app) sandboxesPrune(*cli.Context) error { return a.handOff() }
func (a *app) imageBuild(*cli.Context) error     { return a.handOff() }

// doctorHandOff lets devsandbox-docker run doctor, which checks both backends.
func (a *app) doctorHandOff() {
	if helperPath() != "" {
		_ = a.handOff()
	}
}
