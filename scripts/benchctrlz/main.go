// Command benchctrlz measures how long a Ctrl-Z takes to stop devsandbox: the time
// from Ctrl-Z typed on the terminal of an interactive bash (a pty of its own, the
// controlling terminal of the shell's session), whose job is
//
//	devsandbox --isolator=ISO -- /bin/sh -c 'sleep MARK & …; echo ready; read -r a; …'
//
// to the shell's report that the job stopped (its status 148, read on the shell's
// output, a pipe). Each run is then continued (`fg`) and must end with the command's
// status, its `sleep` gone: a run that does not is an error, not a number.
//
// It runs on each isolator named (bwrap, docker against this machine's engine,
// docker-remote against the stand-in for Docker Desktop and remote engines, krun with
// krun.runtime = "runc": a plain container, no /dev/kvm needed), one run of each in
// turn, the order rotated every round, after one run of each that is not counted
// (docker's first run derives its image, krun's starts devsandbox's podman service).
// An isolator whose component is missing is skipped with a line saying which and
// why. It prints /proc/loadavg before and after, and per isolator the median, p90,
// min and max, and what devsandbox said (its "devsandbox: " lines).
//
// With -dstate (root, the cgroup v1 freezer hierarchy) the command's `sleep` is held
// in uninterruptible sleep ('D', as a write or rename under way on a slow file system)
// across the stop and thawed once the shell reported the job stopped: the stop then
// waits for it up to its bound (jobstop.StopBound, 2 s) and says once what it waits
// for.
//
// The runs are the unprivileged user's (-user, when run as root) in a throwaway home
// (benchrun.ThrowawayHome), with a config file naming that home as the containers'
// (docker.home) and krun's runtime runc; krun's podman uses the user's own podman
// storage, as the integration suite's does. Everything it starts goes at its end: each
// project's sandbox (`devsandbox sandboxes rm`, with its containers and volumes), the
// images its docker runs derived, the podman service devsandbox started for krun, the
// image it loaded into the user's podman storage (when it had to), the home.
//
//	benchctrlz -bin bin/devsandbox [-n 20] [-isolators "bwrap docker docker-remote krun"] [-dstate]
//	           [-image devsandbox-test/busybox:1] [-remote unix:///var/lib/dsb-remote/docker.sock] [-user dsbtest]
//
// Run it under the bench lock on a shared machine (docs/performance.md, "How to
// measure"); `make bench-ctrlz` runs it.
package main

import (
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/devsandbox/devsandbox/scripts/benchrun"
)

// options are the command's flags.
type options struct {
	bin, image, remote, user string
	n                        int
	isolators                []string
	dstate                   bool
}

// known are the isolators benchctrlz can run.
var known = []string{"bwrap", "docker", "docker-remote", "krun"}

func main() {
	var o options
	var isos string
	flag.StringVar(&o.bin, "bin", "bin/devsandbox", "devsandbox binary (its helpers and inits beside it)")
	flag.IntVar(&o.n, "n", 20, "counted runs per isolator")
	flag.StringVar(&isos, "isolators", strings.Join(known, " "), "isolators to run, in the first round's order (bwrap, docker, docker-remote, krun)")
	flag.BoolVar(&o.dstate, "dstate", false, "hold the command's sleep in uninterruptible sleep across the stop (root; the cgroup v1 freezer)")
	flag.StringVar(&o.image, "image", "devsandbox-test/busybox:1", "image of the docker, docker-remote and krun runs (loaded from docker into the user's podman storage when missing there)")
	flag.StringVar(&o.remote, "remote", "unix:///var/lib/dsb-remote/docker.sock", "the docker-remote engine (DOCKER_HOST of its runs)")
	flag.StringVar(&o.user, "user", "dsbtest", "unprivileged user to run as when root")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "benchctrlz: unexpected argument %q (quote -isolators' value)\n", flag.Arg(0))
		os.Exit(2)
	}
	o.isolators = strings.Fields(strings.ReplaceAll(isos, ",", " "))
	for _, iso := range o.isolators {
		if !slices.Contains(known, iso) {
			fmt.Fprintf(os.Stderr, "benchctrlz: -isolators: unknown isolator %q (want some of %s)\n", iso, strings.Join(known, ", "))
			os.Exit(2)
		}
	}
	if o.n <= 0 || len(o.isolators) == 0 {
		fmt.Fprintln(os.Stderr, "benchctrlz: -n must be at least 1 and -isolators name one isolator")
		os.Exit(2)
	}
	if err := run(o); err != nil {
		fmt.Fprintf(os.Stderr, "benchctrlz: %v\n", err)
		os.Exit(1)
	}
}

// summary is one isolator's line: median, p90, min and max of took in ms.
func summary(name string, took []time.Duration) string {
	if len(took) == 0 {
		return fmt.Sprintf("  %-14s no runs", name)
	}
	return fmt.Sprintf("  %-14s median %8.1f ms  p90 %8.1f ms  min %8.1f ms  max %8.1f ms  (%d runs)", name,
		ms(benchrun.Percentile(took, 50)), ms(benchrun.Percentile(took, 90)), ms(benchrun.Percentile(took, 0)), ms(benchrun.Percentile(took, 100)), len(took))
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
