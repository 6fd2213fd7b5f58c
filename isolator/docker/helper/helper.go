// Package helper is devsandbox's side of devsandbox-docker, the program that links the
// docker backend: the Docker client's package initialisation would cost every launch
// a few milliseconds, so devsandbox (the bwrap launch path) has only the Stub, which
// hands each request to devsandbox-docker (package handoff) and tells without it, from
// the engine's address alone, whether docker could run. The types of what devsandbox
// keeps per project (Sandbox) live here too, for the CLI to print.
//
// This package imports no Docker client; see deps_test.go in cmd/devsandbox.
package helper

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/devsandbox/devsandbox/internal/termsafe"
	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/isolator/docker/engineaddr"
	"github.com/devsandbox/devsandbox/isolator/handoff"
	"github.com/devsandbox/devsandbox/isolator/pin"
)

// Program is the helper's file name, installed next to devsandbox.
const Program = "devsandbox-docker"

// Settings are the docker.* settings and what the backend needs from the host.
type Settings struct {
	Image string `json:"image"`          // docker.image
	Home  string `json:"home,omitempty"` // docker.home: the in-container home
	Keep  bool   `json:"keep,omitempty"` // docker.keep_container
	// AgentBind is docker.agent_bind: a local engine binds the ssh agent relay's
	// socket rather than carry the agent over the Engine API.
	AgentBind bool   `json:"agentBind,omitempty"`
	Version   string `json:"version"` // devsandbox's
	// Host is docker.host; HostHome the host user's home, where the docker CLI's
	// contexts are (the engine address also reads the helper's environment).
	Host     string `json:"host,omitempty"`
	HostHome string `json:"hostHome,omitempty"`
	// FirewallTool, when set, is the program the firewall helper container runs
	// instead of devsandbox-init (a test override: a tool that fails must abort the
	// run).
	FirewallTool string `json:"firewallTool,omitempty"`
	// StopGrace is how long the command has to exit after SIGTERM once the run's
	// context ended, before the session is killed (0: container.DefaultStopGrace).
	StopGrace time.Duration `json:"stopGrace,omitempty"`
}

// Operations devsandbox-docker answers besides an isolator's.
const (
	OpSandboxes  = "sandboxes"   // Args: Dirs; Data: Listing
	OpRemove     = "remove"      // Args: Sandbox
	OpBuildImage = "build-image" // Args: BuildArgs; progress on stderr
	OpSweep      = "sweep"       // Args: SweepArgs; Data: []Leftover
	// OpPruneImages removes the derived images and other builds' default images no run used within --days (PruneImages). Args: PruneArgs; Data: []string,
	// a line per image.
	OpPruneImages = "prune-images"
)

// SweepArgs are the arguments of OpSweep: the user whose leftovers go, whether only
// to list them, and the projects (by name) runs of which are going on: their content
// volumes stay.
type SweepArgs struct {
	UID    int      `json:"uid"`
	DryRun bool     `json:"dryRun,omitempty"`
	Busy   []string `json:"busy,omitempty"`
}

// Leftover is an object a crashed run left in the engine (a stopped container, a
// volume no container uses), which `sandboxes prune` removes.
type Leftover struct {
	Kind    string `json:"kind"` // "container" or "volume"
	Name    string `json:"name"`
	Project string `json:"project,omitempty"` // the sandbox's name
}

// PruneArgs are OpPruneImages' arguments.
type PruneArgs struct {
	UID    int  `json:"uid"`
	DryRun bool `json:"dryRun"`
	// StateRoot is devsandbox's state directory, which holds the records of the
	// images' last uses (package imageuse); MaxAge is prune's --days.
	StateRoot string        `json:"stateRoot"`
	MaxAge    time.Duration `json:"maxAge"`
}

// Sandbox is what devsandbox keeps for one project: a kept container, a home volume
// (remote engines), the sandbox home and the state directory on the host.
type Sandbox struct {
	Name          string   `json:"name"`                 // <basename>-<id>
	Dir           string   `json:"dir,omitempty"`        // the project's path, when known
	DirExists     bool     `json:"dirExists"`            // the project still exists
	Containers    []string `json:"containers,omitempty"` // container names
	ContainerSize int64    `json:"containerSize"`        // bytes written in the containers
	Running       bool     `json:"running"`
	Volumes       []string `json:"volumes,omitempty"`
	Home          string   `json:"home,omitempty"` // host sandbox home dir
	HomeSize      int64    `json:"homeSize"`
	// HomeSizeBound is true when HomeSize is a lower bound: the walk of the home (which
	// the sandbox writes) stopped at a bound, which HomeSizeStop names ("stopped after
	// 100000 entries", "stopped at depth 64", "stopped after 2s").
	HomeSizeBound bool   `json:"homeSizeBound"`
	HomeSizeStop  string `json:"homeSizeStop,omitempty"`
	State         string `json:"state,omitempty"` // host state dir
	StateSize     int64  `json:"stateSize"`
	// StateSizeBound and StateSizeStop are HomeSizeBound and HomeSizeStop for the
	// state directory (which holds the sessions' /tmp).
	StateSizeBound bool      `json:"stateSizeBound"`
	StateSizeStop  string    `json:"stateSizeStop,omitempty"`
	LastUsed       time.Time `json:"lastUsed"`
}

// Dirs are the host directories holding per-project data: $XDG_DATA_HOME/devsandbox
// and $XDG_STATE_HOME/devsandbox, and the user whose they are: only the containers and
// volumes labelled with that uid are the user's.
type Dirs struct {
	Data, State string
	UID         int
}

// Listing is the answer of OpSandboxes: every project devsandbox keeps something
// for, and why the engine was not asked, when it was not.
type Listing struct {
	Sandboxes   []Sandbox `json:"sandboxes"`
	EngineError string    `json:"engineError,omitempty"`
	// Refused: the engine was refused (EngineError says why: Podman's
	// Docker-compatible API, a listener whose ping is not a Docker engine's), not
	// merely unreachable; every command that would reach it is refused.
	Refused bool `json:"refused,omitempty"`
}

// ErrEngineRefused is wrapped by the error of Sandboxes when the docker engine was
// refused (Listing.Refused): it is not one the docker isolator speaks to, and the
// command is refused (125) rather than done on the host side alone.
var ErrEngineRefused = errors.New("the docker engine is refused")

// engineRefused is Listing.EngineError of a refused engine: its message as it is,
// an ErrEngineRefused and an isolator.ErrUnavailable.
type engineRefused struct{ msg string }

func (e engineRefused) Error() string { return e.msg }

func (e engineRefused) Is(target error) bool {
	return target == ErrEngineRefused || target == isolator.ErrUnavailable
}

// BuildArgs are the arguments of OpBuildImage.
type BuildArgs struct {
	Base, Tag string
}

// Prunable reports why s should go: its project is gone, or it was unused longer than
// maxAge (and is not running). "" means keep it.
func Prunable(s Sandbox, now time.Time, maxAge time.Duration) string {
	if s.Running {
		return ""
	}
	if s.Dir != "" && !s.DirExists {
		return "the project " + s.Dir + " no longer exists"
	}
	if !s.LastUsed.IsZero() && now.Sub(s.LastUsed) > maxAge {
		return fmt.Sprintf("unused for %d days", int(now.Sub(s.LastUsed).Hours()/24))
	}
	return ""
}

// Stub is the docker isolator as devsandbox sees it: every method but QuickCheck runs
// devsandbox-docker.
type Stub struct {
	*handoff.Stub
	settings Settings
	environ  map[string]string
}

var (
	_ isolator.Isolator  = (*Stub)(nil)
	_ isolator.Diagnoser = (*Stub)(nil)
	_ isolator.Quick     = (*Stub)(nil)
)

// New is the Stub with s. environ is the host environment the helper runs with
// (config.Host.Vars); phase, when set, receives its launch phases.
func New(s Settings, environ map[string]string, phase func(string)) *Stub {
	return &Stub{Stub: &handoff.Stub{Backend: "docker", Program: Program, Settings: s, Environ: environ, Phase: phase, StopGrace: s.StopGrace}, settings: s, environ: environ}
}

// QuickCheck implements isolator.Quick: devsandbox-docker is installed and the
// engine's Unix socket exists (a remote engine is assumed usable). It starts nothing.
func (s *Stub) QuickCheck() isolator.Status {
	if !s.Installed() {
		return isolator.Status{State: isolator.Unavailable, Reason: Program + " is not installed next to devsandbox", Fix: "install it (make install)"}
	}
	a, err := engineaddr.Resolve(s.settings.Host, s.environ, s.settings.HostHome)
	if err != nil {
		return isolator.Status{State: isolator.Unavailable, Reason: err.Error(), Fix: "fix DOCKER_HOST or the docker context (docker context use default), or set docker.host"}
	}
	if sock, ok := strings.CutPrefix(a.Host, "unix://"); ok {
		if _, err := os.Stat(sock); err != nil {
			return isolator.Status{State: isolator.Unavailable, Reason: fmt.Sprintf("no docker engine at %s (%s)", a.Host, a.Origin), Fix: "start Docker, or set docker.host / DOCKER_HOST"}
		}
	}
	return isolator.Status{State: isolator.Active}
}

// PinsSources reports whether a run pins the Plan's bind sources on this host
// (package pin): a local engine binds this host's paths; a remote engine's files
// are not this host's to open, and a run checks only the mount destinations there
// (isolator.CheckDestinations). An address that does not resolve counts as local:
// the stricter checks.
func (s *Stub) PinsSources() bool {
	a, err := s.engine()
	defer a.Unpin()
	return err != nil || a.Local()
}

// engine resolves the engine's address and pins its Unix socket (engineaddr.Pin), so
// that Local asks its listener as a run's does: a relayed socket's engine is judged
// remote here too. A socket that cannot be opened is left unpinned (Local by its
// form); the run says why it cannot reach it. The caller Unpins it when done.
func (s *Stub) engine() (engineaddr.Address, error) {
	a, err := engineaddr.Resolve(s.settings.Host, s.environ, s.settings.HostHome)
	if err != nil {
		return a, err
	}
	return a.TryPin(), nil
}

// CheckHost is the refusals a run makes on this host before anything starts
// (isolator.HostChecker), without creating anything: a local engine's run pins the
// Plan's sources (pin.Check); a remote engine's checks the destinations only. What
// depends on the engine's version (a plan with anchors on a remote engine older than
// API 1.45 is refused) only the launch, which asks the engine, can tell.
func (s *Stub) CheckHost(p *isolator.Plan) error {
	if !s.PinsSources() {
		return isolator.CheckDestinations(p)
	}
	return pin.Check(p)
}

var _ isolator.HostChecker = (*Stub)(nil)

var _ isolator.Viewer = (*Stub)(nil)

// ViewPlacement implements isolator.Viewer: p as a docker container sees it, its
// home at docker.home (Settings.Home) and, on an engine that does not reach this
// machine's files (not a local Unix socket, or one a relay serves), an engine volume
// no host file backs, as a run makes it (Placement). An engine address that does not
// resolve fails, as a run would.
func (s *Stub) ViewPlacement(*isolator.Plan) (isolator.Placement, error) {
	a, err := s.engine()
	if err != nil {
		return isolator.Placement{}, fmt.Errorf("the docker engine's address, which says where the sandbox home is: %w", err)
	}
	defer a.Unpin()
	return Placement(s.settings.Home, a), nil
}

// Placement is where a docker container places a Plan (isolator.Placement) with its
// home at home (docker.home) on the engine at a: the image's root; the home an engine
// volume exactly when a is not a local Unix socket (a run's home volume). The Stub
// and the backend (docker.Isolator) both say it.
func Placement(home string, a engineaddr.Address) isolator.Placement {
	return isolator.Placement{Container: &isolator.ContainerHome{Path: home, Volume: !a.Local()}}
}

// Installed reports whether devsandbox-docker is there to run.
func (s *Stub) Installed() bool { return s.Path != "" || handoff.Beside(Program) != "" }

// Prune removes what crashed runs of user uid left in the engine (stopped containers,
// volumes no container uses that were a run's own; the content volumes of the busy
// projects stay), then the sandboxes of list that Prunable names, saying so on w; with dryRun it only says what it would remove. It
// goes on past a failure and returns them all.
func (s *Stub) Prune(ctx context.Context, uid int, stateRoot string, list []Sandbox, busy []string, maxAge time.Duration, dryRun bool, w io.Writer) error {
	var errs []error
	left, err := s.Sweep(ctx, uid, dryRun, busy)
	if err != nil {
		errs = append(errs, fmt.Errorf("removing what crashed runs left: %w", err))
	}
	for _, l := range left {
		verb := "removed"
		if dryRun {
			verb = "would remove"
		}
		fmt.Fprintf(w, "%s %s %s: left by an earlier run of %s and no longer used\n", verb, termsafe.Line(l.Kind), termsafe.Line(l.Name), termsafe.Line(l.Project))
	}
	for _, sb := range list {
		why := Prunable(sb, time.Now(), maxAge)
		switch {
		case why == "":
		case dryRun:
			fmt.Fprintf(w, "would remove %s: %s\n", termsafe.Line(sb.Name), termsafe.Line(why))
		default:
			if err := s.RemoveSandbox(ctx, sb); err != nil {
				errs = append(errs, err)
				continue
			}
			fmt.Fprintf(w, "removed %s: %s\n", termsafe.Line(sb.Name), termsafe.Line(why))
		}
	}
	// The images no run used within maxAge (derived ones, other builds' default ones).
	r, err := s.call(ctx, OpPruneImages, PruneArgs{UID: uid, DryRun: dryRun, StateRoot: stateRoot, MaxAge: maxAge}, nil)
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	var lines []string
	if err := json.Unmarshal(r.Data, &lines); err != nil {
		return errors.Join(append(errs, fmt.Errorf("reading the answer of %s: %w", Program, err))...)
	}
	for _, l := range lines {
		fmt.Fprintln(w, termsafe.Line(l))
	}
	return errors.Join(errs...)
}

// Sandboxes lists every project devsandbox keeps something for, sorted by name. With
// no engine reachable, the host side is still listed, and the engine's error
// returned too.
func (s *Stub) Sandboxes(ctx context.Context, d Dirs) ([]Sandbox, error) {
	r, err := s.call(ctx, OpSandboxes, d, nil)
	if err != nil {
		return nil, err
	}
	var l Listing
	if err := json.Unmarshal(r.Data, &l); err != nil {
		return nil, fmt.Errorf("reading the answer of %s: %w", Program, err)
	}
	if l.Refused {
		return l.Sandboxes, engineRefused{l.EngineError}
	}
	if l.EngineError != "" {
		return l.Sandboxes, errors.New(l.EngineError)
	}
	return l.Sandboxes, nil
}

// Sweep removes what crashed runs of user uid left in the engine (or with dryRun lists
// it), and returns what it removed.
func (s *Stub) Sweep(ctx context.Context, uid int, dryRun bool, busy []string) ([]Leftover, error) {
	r, err := s.call(ctx, OpSweep, SweepArgs{UID: uid, DryRun: dryRun, Busy: busy}, nil)
	if err != nil {
		return nil, err
	}
	var out []Leftover
	if len(r.Data) > 0 {
		if err := json.Unmarshal(r.Data, &out); err != nil {
			return nil, fmt.Errorf("reading the answer of %s: %w", Program, err)
		}
	}
	return out, nil
}

// RemoveSandbox removes everything sb lists: containers (running or not), volumes, the
// sandbox home and the state directory.
func (s *Stub) RemoveSandbox(ctx context.Context, sb Sandbox) error {
	_, err := s.call(ctx, OpRemove, sb, nil)
	return err
}

// BuildImage builds tag from devsandbox's Dockerfile on base, writing the build's
// progress to out.
func (s *Stub) BuildImage(ctx context.Context, base, tag string, out io.Writer) error {
	_, err := s.call(ctx, OpBuildImage, BuildArgs{Base: base, Tag: tag}, out)
	return err
}

// call runs op with args; the program's stderr goes to errOut when set.
func (s *Stub) call(ctx context.Context, op string, args any, errOut io.Writer) (*handoff.Result, error) {
	r, err := s.Call(ctx, handoff.Request{Op: op, Args: handoff.Args(args)}, isolator.Stdio{Err: errOut})
	if err != nil {
		return nil, err
	}
	return r, r.Err()
}
