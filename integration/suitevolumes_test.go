//go:build integration

package integration

import (
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"syscall"
)

// A run's session endpoint volume (devsandbox-<project>-ep-<session>: the sockets a
// docker sandbox shares with its session's companion) is the run's own: the run
// removes it once its containers are gone, and a run that could not (devsandbox
// killed) leaves it labelled for the next run's sweep. One CI run after another left
// one such volume in the local engine, with no label: made by the engine itself for a
// sandbox container created after the companion's failure had removed the volume
// (isolator/docker: pendingCompanion). No test's runs are left to a later sweep, so
// the suite fails when it ends with a session endpoint volume the engines did not
// have when it started, and removes it.

// sessionVolume matches the name of a run's session endpoint volume (a kept
// container's, devsandbox-<project>-ep, is the project's and stays with it).
var sessionVolume = regexp.MustCompile(`^devsandbox-.+-ep-[0-9a-f]+$`)

// engineSessionVolumes lists the session endpoint volumes of the engine at addr.
func engineSessionVolumes(addr string) (map[string]bool, error) {
	cmd := exec.Command("docker", "volume", "ls", "-q")
	cmd.Env = append(os.Environ(), "DOCKER_HOST="+addr)
	out, err := cmd.Output()
	if err != nil {
		return nil, err
	}
	names := map[string]bool{}
	for _, n := range strings.Fields(string(out)) {
		if sessionVolume.MatchString(n) {
			names[n] = true
		}
	}
	return names, nil
}

// recordSessionVolumes lists the session endpoint volumes each engine has before the
// suite runs (recordSuiteImages took the suite's lock).
func recordSessionVolumes() {
	suiteStart.volumes = map[string]map[string]bool{}
	for _, a := range suiteEngines() {
		if names, err := engineSessionVolumes(a); err == nil {
			suiteStart.volumes[a] = names
		}
	}
}

// sessionVolumesLeft reports, and removes, the session endpoint volumes the suite's
// runs left in the engines; it returns false when the suite left one while it was the
// only suite running (another's runs may still be using theirs: then it only says so).
func sessionVolumesLeft() bool {
	if suiteStart.volumes == nil {
		return true
	}
	others := suiteStart.lock == nil || syscall.Flock(int(suiteStart.lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil
	ok := true
	for _, a := range suiteEngines() {
		before, listed := suiteStart.volumes[a]
		if !listed {
			continue
		}
		now, err := engineSessionVolumes(a)
		if err != nil {
			fmt.Fprintf(os.Stderr, "integration: the session endpoint volumes of %s could not be listed at the suite's end: %v\n", a, err)
			continue
		}
		var left []string
		for n := range now {
			if !before[n] {
				left = append(left, n)
			}
		}
		if len(left) == 0 {
			continue
		}
		slices.Sort(left)
		if others {
			fmt.Fprintf(os.Stderr, "integration: %d session endpoint volumes in %s that were not there at the suite's start; another suite is running (%s), they may be its runs': %s\n", len(left), a, suiteImagesLock, strings.Join(left, " "))
			continue
		}
		ok = false
		for _, n := range left {
			cmd := exec.Command("docker", "volume", "inspect", "-f", "created {{.CreatedAt}}, labels {{json .Labels}}, options {{json .Options}}", n)
			cmd.Env = append(os.Environ(), "DOCKER_HOST="+a)
			what, _ := cmd.CombinedOutput()
			cmd = exec.Command("docker", "volume", "rm", n)
			cmd.Env = append(os.Environ(), "DOCKER_HOST="+a)
			removed := "removed"
			if out, err := cmd.CombinedOutput(); err != nil {
				removed = fmt.Sprintf("not removed: %v: %s", err, strings.TrimSpace(string(out)))
			}
			fmt.Fprintf(os.Stderr, "FAIL: the suite's runs left the session endpoint volume %s in %s (%s; %s; %s)\n", n, a, strings.TrimSpace(string(what)), likely(n), removed)
		}
	}
	return ok
}
