// Command devsandbox-krun is the krun isolator of devsandbox: it links podman's API
// bindings, which devsandbox itself does not (their package initialisation would slow
// every launch). devsandbox runs it with one request on a pipe; see isolator/handoff
// for the contract. It is not meant to be run by hand.
package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/devsandbox/devsandbox/internal/nocore"
	"github.com/devsandbox/devsandbox/internal/termsafe"
	"github.com/devsandbox/devsandbox/isolator/handoff"
	"github.com/devsandbox/devsandbox/isolator/krun"
	"github.com/devsandbox/devsandbox/isolator/krun/helper"
)

func main() {
	// It holds secrets (package nocore): no core of it may land in a working directory.
	if err := nocore.Off(); err != nil {
		fmt.Fprintf(os.Stderr, "%s: cannot turn off core dumps: %v\n", "devsandbox-krun", err)
		os.Exit(2)
	}
	if len(os.Args) == 4 && os.Args[1] == krun.SuperviseArg {
		os.Exit(krun.Supervise(os.Args[2], os.Args[3], os.Stderr))
	}
	if len(os.Args) == 2 && os.Args[1] == krun.AnchorArg {
		os.Exit(krun.StageAnchors(os.Stdin, os.Stdout))
	}
	if len(os.Args) != 2 || os.Args[1] != handoff.ServeArg {
		fmt.Fprintf(os.Stderr, "%s: the krun isolator of devsandbox; run `devsandbox --isolator=krun`\n", helper.Program)
		os.Exit(2)
	}
	os.Exit(handoff.Serve(handoff.ServeIsolator(func(j *handoff.Job) (handoff.Backend, error) {
		return backend(j)
	}, map[string]handoff.Handler{helper.OpPruneImages: pruneImages}), os.Stdin, os.Stdout, os.Stderr))
}

// backend is the krun backend the request's settings make.
func backend(j *handoff.Job) (*krun.Isolator, error) {
	var s helper.Settings
	if err := json.Unmarshal(j.Settings, &s); err != nil {
		return nil, fmt.Errorf("the krun settings: %w", err)
	}
	return &krun.Isolator{
		Settings:  s,
		Signals:   j.Signals,
		Freezer:   j.Freezer,
		StopGrace: s.StopGrace,
		Phase:     j.Phase,
		Warn:      func(m string) { fmt.Fprintf(os.Stderr, "devsandbox: warning: %s\n", termsafe.Line(m)) },
	}, nil
}

// pruneImages serves helper.OpPruneImages.
func pruneImages(j *handoff.Job) handoff.Result {
	var r handoff.Result
	var a helper.PruneArgs
	b, err := backend(j)
	if err == nil {
		err = json.Unmarshal(j.Args, &a)
	}
	if err == nil {
		var lines []string
		lines, err = b.PruneImages(j.Ctx, a.StateRoot, a.MaxAge, a.DryRun)
		r.Data = handoff.Args(lines)
	}
	r.SetError(err)
	return r
}
