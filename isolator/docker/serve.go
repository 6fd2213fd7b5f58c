package docker

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/devsandbox/devsandbox/isolator/docker/helper"
	"github.com/devsandbox/devsandbox/isolator/handoff"
)

// New returns the backend for s; env is the host environment (the engine address
// reads DOCKER_HOST, DOCKER_CONTEXT and DOCKER_CONFIG from it).
func New(s helper.Settings, env map[string]string) *Isolator {
	return &Isolator{
		Options:  Options{Image: s.Image, Home: s.Home, Keep: s.Keep, Version: s.Version, BindAgent: s.AgentBind},
		HostAddr: s.Host, Env: env, HostHome: s.HostHome, FirewallTool: s.FirewallTool,
		StopGrace: s.StopGrace,
	}
}

// Handler is devsandbox-docker's: the isolator's operations (package handoff) and
// package helper's, with the backend the request's settings make, and the head start
// of a run (headstart.go), for handoff.ServeEarly. warn receives warnings for people.
func Handler(warn func(string)) (handoff.Handler, handoff.HeadStart) {
	heads := &headStarts{}
	backend := func(j *handoff.Job) (*Isolator, error) {
		var s helper.Settings
		if err := json.Unmarshal(j.Settings, &s); err != nil {
			return nil, fmt.Errorf("the docker settings: %w", err)
		}
		b := New(s, environ())
		b.Signals, b.Freezer, b.Phase, b.Warn, b.Progress = j.Signals, j.Freezer, j.Phase, warn, j.Stdio.Err
		if j.Op == handoff.OpRun {
			b.head = heads.take(j.Settings)
		}
		return b, nil
	}
	op := func(f func(b *Isolator, j *handoff.Job) (any, error)) handoff.Handler {
		return func(j *handoff.Job) handoff.Result {
			var r handoff.Result
			b, err := backend(j)
			if err == nil {
				var data any
				if data, err = f(b, j); data != nil {
					r.Data = handoff.Args(data)
				}
			}
			r.SetError(err)
			return r
		}
	}
	h := handoff.ServeIsolator(func(j *handoff.Job) (handoff.Backend, error) { return backend(j) }, map[string]handoff.Handler{
		helper.OpSandboxes: op(func(b *Isolator, j *handoff.Job) (any, error) {
			var d helper.Dirs
			if err := json.Unmarshal(j.Args, &d); err != nil {
				return nil, err
			}
			list, err := b.Sandboxes(j.Ctx, d)
			l := helper.Listing{Sandboxes: list}
			if err != nil {
				// Refused, not merely down: an engine that does not answer leaves
				// the host side listed, with a warning.
				r, ok := refused(err)
				l.Refused = ok && !r.down
				l.EngineError = err.Error()
			}
			return l, nil
		}),
		helper.OpRemove: op(func(b *Isolator, j *handoff.Job) (any, error) {
			var s helper.Sandbox
			if err := json.Unmarshal(j.Args, &s); err != nil {
				return nil, err
			}
			return nil, b.RemoveSandbox(j.Ctx, s)
		}),
		helper.OpSweep: op(func(b *Isolator, j *handoff.Job) (any, error) {
			var a helper.SweepArgs
			if err := json.Unmarshal(j.Args, &a); err != nil {
				return nil, err
			}
			return b.Sweep(j.Ctx, a.UID, a.DryRun, a.Busy)
		}),
		helper.OpPruneImages: op(func(b *Isolator, j *handoff.Job) (any, error) {
			var a helper.PruneArgs
			if err := json.Unmarshal(j.Args, &a); err != nil {
				return nil, err
			}
			return b.PruneImages(j.Ctx, a.UID, a.StateRoot, a.MaxAge, a.DryRun)
		}),
		helper.OpBuildImage: op(func(b *Isolator, j *handoff.Job) (any, error) {
			var a helper.BuildArgs
			if err := json.Unmarshal(j.Args, &a); err != nil {
				return nil, err
			}
			return nil, b.BuildImage(j.Ctx, a.Base, a.Tag, j.Stdio.Err)
		}),
	})
	return h, heads.start
}

// environ is the process's environment as a map.
func environ() map[string]string {
	env := map[string]string{}
	for _, kv := range os.Environ() {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	return env
}
