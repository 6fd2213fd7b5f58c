package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/devsandbox/devsandbox/config"
	"github.com/devsandbox/devsandbox/egress"
	"github.com/devsandbox/devsandbox/internal/termsafe"
	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/isolator/bwrap"
	"github.com/devsandbox/devsandbox/isolator/planner"
	"github.com/devsandbox/devsandbox/isolator/runmark"
	"github.com/devsandbox/devsandbox/isolator/sandboxinit"
	"github.com/devsandbox/devsandbox/isolator/tmpdir"
)

// On Linux this binary has the bwrap backend, and is also bwrap's init (when run
// as InitPath). bwrap_other.go stands in for this file elsewhere.

// startup runs this binary as the init when started as InitPath (bwrap's, or a
// container's without devsandbox-init; it then never returns); otherwise it marks
// every descriptor devsandbox inherited close-on-exec, so none reaches bwrap or the
// sandbox (sandboxinit.CloseOnExecInherited).
func startup() {
	if os.Args[0] == bwrap.InitPath {
		os.Exit(sandboxinit.Run(os.Args[1:], os.Stderr))
	}
	sandboxinit.CloseOnExecInherited()
}

// prepareHeap backs the heap with a huge page (hugeHeap) for the work that follows.
func prepareHeap() { hugeHeap() }

// autoOrder is the preference of isolator = "auto".
var autoOrder = []string{"bwrap", "docker"}

// etcHead is the /etc snapshot opened ahead of the Plan.
type etcHead = bwrap.EtcHead

// headStart has the bwrap run's /etc snapshot opened as soon as the default system
// view that planner.LoadDir started working out is done (sys; nil when the
// configuration runs no bwrap or asks for another view), on that view's goroutine,
// while the Plan is built: Run uses it when it is what the Plan asks for.
func (a *app) headStart(sys *planner.SystemHead) {
	a.etcHead = bwrap.EtcAhead(sys)
}

// headDone releases what headStart opened and the run did not use.
func (a *app) headDone() {
	a.etcHead.Close()
}

// early is bwrap's early start.
type early = bwrap.Early

// startEarly starts bwrap from the record of this command line's last launch, when
// asked for (config.EarlyStartVar): before anything else of the launch, so that
// bwrap's setup overlaps the configuration and the Plan. Run adopts it when its
// rendering is the same, else abandons it.
func (a *app) startEarly(args []string) {
	set := config.EarlyStart(a.environ)
	root, mode := set.StateRoot, set.Mode
	if mode == config.EarlyOff || root == "" {
		// Nothing of the records is touched: none is read, none written (Run
		// records a launch only through an Early).
		a.earlyOff = "off: " + set.Why
		if set.Unknown {
			// Off, as an unknown value never turns on what was not asked for, but
			// said: a misspelt opt-in would otherwise go unnoticed.
			a.warn("%s; the early start is off", set.Why)
		}
		return
	}
	// The run's signal subscription, in effect before bwrap starts: a ^C that killed
	// devsandbox in bwrap's first milliseconds (before its child has set its own
	// parent-death signal, and while it waits for its parent to map its user ids)
	// would leave that child waiting for ever. Caught, it reaches the run as any
	// signal during planning does, or ends the launch, which abandons the start. Made
	// first, waited for only right before bwrap's start (StartEarly's subscribed):
	// its round trips between threads run beside the record's read and vetting.
	sigs := isolator.CatchSignals()
	wd, err := os.Getwd()
	if err != nil {
		sigs.Stop()
		return
	}
	// The host's variables as the configuration reads them: the first entry wins. A
	// credential's placeholder variable is no host variable: its value is made here,
	// fresh, and the plan takes it (planner.Request.Placeholders), so that the early
	// bwrap's environment can be the plan's.
	lookup := func(name string) (string, bool) {
		if strings.HasPrefix(name, planner.PlaceholderPrefix) {
			if a.placeholders == nil {
				a.placeholders = map[string]string{}
			}
			if _, ok := a.placeholders[name]; !ok {
				a.placeholders[name] = planner.NewPlaceholder()
			}
			return a.placeholders[name], true
		}
		for _, kv := range a.environ {
			if n, v, ok := strings.Cut(kv, "="); ok && n == name {
				return v, true
			}
		}
		return "", false
	}
	a.early = bwrap.StartEarly(root, os.Getuid(), wd, args, lookup, mode == config.EarlyAlways, sigs.Wait)
	if a.early.Started() {
		a.signals = sigs
	} else {
		sigs.Stop()
	}
}

// earlyRows is doctor's row on bwrap's early start for a launch from here with cfg.
func (a *app) earlyRows(cfg *config.Config) []isolator.Check {
	set := config.EarlyStart(a.environ)
	s := bwrap.EarlySetting{On: set.Mode != config.EarlyOff, Always: set.Mode == config.EarlyAlways, Why: set.Why,
		DefaultOn: config.EarlyDefault != config.EarlyOff, StateRoot: set.StateRoot}
	if !cfg.Sandbox.EarlyStart {
		s.KeyOff = cfg.Origins["sandbox.early_start"]
	}
	return []isolator.Check{bwrap.EarlyCheck(s)}
}

// earlyConfig honours sandbox.early_start = false, read after the early start may
// have begun: the start is abandoned (its bwrap killed with its child and reaped, its
// session /tmp removed) and this launch's record removed, so that the next launch of
// the command line makes none, and with it the records of the project's other command
// lines (bwrap.Early.Forget); the run records nothing (no Early).
func (a *app) earlyConfig(cfg *config.Config, project string) {
	if cfg.Sandbox.EarlyStart || a.early == nil {
		return
	}
	note := a.early.Note()
	state := ""
	if project != "" && a.early.Root() != "" {
		state = filepath.Join(a.early.Root(), project)
	}
	n, err := a.early.Forget(state)
	if err != nil {
		a.warn("%v", err)
	}
	a.early = nil
	a.earlyOff = fmt.Sprintf("off: sandbox.early_start = false (%s); before the configuration: %s", cfg.Origins["sandbox.early_start"], note)
	if n > 0 {
		a.earlyOff += fmt.Sprintf("; %d launch records of this project removed", n)
	}
}

// abandonEarly ends an early start no run adopted (a launch that failed before
// bwrap, or ran another isolator).
func (a *app) abandonEarly() {
	if err := a.early.Abandon(); err != nil {
		a.warn("%v", err)
	}
}

// catchSignals subscribes to the signals a bwrap run relays while the Plan is built,
// when bwrap is the isolator it will probably select (see isolator.Signals).
func (a *app) catchSignals(cfg *config.Config) {
	switch {
	case cfg.Isolator != "bwrap" && cfg.Isolator != "auto":
		if a.signals != nil { // the early start's: no bwrap run will adopt it
			a.abandonEarly()
			a.stopSignals()
		}
	case a.signals == nil:
		a.signals = isolator.CatchSignals()
	}
}

// addBwrap adds the bwrap backend to t.
func (a *app) addBwrap(t isolator.Table, cfg *config.Config, phase func(string)) {
	b := &bwrap.Isolator{Warn: func(m string) { a.warn("%s", m) }, Phase: phase, Signals: a.signals, EtcHead: a.etcHead,
		Binaries: egressBinaries(cfg.Host), RuntimeDir: cfg.Host.RuntimeDir, Planned: a.planned}
	if phase != nil { // --debug
		b.Debug = func(m string) { fmt.Fprintf(a.stderr, "devsandbox: debug: %s\n", termsafe.Line(m)) }
		switch {
		case a.early != nil:
			b.Debug("early start: " + a.early.Note())
		case a.earlyOff != "":
			b.Debug("early start: " + a.earlyOff)
		}
	}
	b.Early = a.early
	t["bwrap"] = func() isolator.Isolator { return b }
}

// egressBinaries are the firewall tools, with the test overrides DEVSANDBOX_NFT and
// DEVSANDBOX_IPTABLES (absolute paths).
func egressBinaries(h config.Host) egress.Binaries {
	bin := egress.DefaultBinaries
	if p, err := exec.LookPath("pasta"); err == nil {
		bin.Pasta = p
	}
	if v := nftOverride(h); v != "" {
		bin.Nft = v
	}
	if v := h.Vars["DEVSANDBOX_IPTABLES"]; filepath.IsAbs(v) {
		bin.Iptables, bin.Ip6tables = v, v
	}
	return bin
}

// runGoingOn reports whether a run of the project whose state directory is state is
// going on, or may be starting: a bwrap run holds a session /tmp there (tmpdir.Held),
// or a run its run mark (runmark.Held: krun and docker runs, bwrap runs with /tmp in
// memory).
func runGoingOn(state string) bool {
	now := time.Now()
	return state != "" && (tmpdir.Held(filepath.Join(state, "tmp"), now) || runmark.Held(state, "", now))
}

// pruneRecords removes the early start's launch records no launch wrote or used
// within maxAge (bwrap.PruneRecords).
func (a *app) pruneRecords(stateRoot string, maxAge time.Duration, dryRun bool) {
	gone, err := bwrap.PruneRecords(stateRoot, maxAge, time.Now(), dryRun)
	if err != nil {
		a.warn("the early start's launch records in %s were not pruned: %v", termsafe.Line(filepath.Join(stateRoot, "prestart")), err)
	}
	for _, p := range gone {
		fmt.Fprintf(a.stdout, "%s %s: a launch record of the early start no launch used within --days\n", verb(dryRun), termsafe.Line(p))
	}
}

// pruneTmp removes the session /tmp dirs that killed bwrap runs left (no run holds
// them).
func (a *app) pruneTmp(stateDir string, dryRun bool) {
	verb := "removed"
	if dryRun {
		verb = "would remove"
	}
	for _, d := range tmpdir.Prune(stateDir, time.Now(), dryRun) {
		fmt.Fprintf(a.stdout, "%s %s: the session /tmp of a run that ended without removing it\n", verb, termsafe.Line(d))
	}
}
