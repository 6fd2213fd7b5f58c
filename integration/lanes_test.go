//go:build integration

package integration

import (
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// The suite's time is mostly the engines': a container start here costs about half a
// second of which the machine's processors are idle half (dockerd re-executes itself
// as the network hook, containerd starts a shim). The subtests of one test that run
// on different components — bwrap, podman (krun), and each docker engine — therefore
// run at once, one lane per component: inLanes. What they share is only what the
// suite gives all runs (the throwaway home, written atomically by writeHome, and the
// state directories in it, keyed by project); each makes its own project. Subtests on
// the same engine (docker-remote and docker-tcp are one dockerd) stay one after the
// other, as do the subtests of the tests in oneLane, and of a test run inside a lane
// already.

// lanesEnv, set to 0, runs every subtest one after the other (to compare, or to read
// one subtest's output at a time).
const lanesEnv = "DEVSANDBOX_IT_LANES"

// oneLane are the tests whose subtests must not overlap, with why.
var oneLane = map[string]string{
	// They remove the trust store (~/.config/devsandbox/trusted.toml) at their end,
	// which holds what the other subtests trusted.
	"TestConfigFileInProject":                 "trust store",
	"TestConfigFileLinkedIntoProject":         "trust store",
	"TestConfigFileInOtherProject":            "trust store",
	"TestConfigFileWhereRunWrites":            "trust store",
	"TestProjectTrust":                        "trust store",
	"TestPlantedGitDropsEnclosingProjectFile": "trust store",
	"TestRemovedTrustedProjectFile":           "trust store",
	"TestSyscallRelaxation":                   "trust store",
	// They write, change or remove files of the home every run reads (the user's
	// config, ~/.gitconfig, ~/.config/git, tool directories, ~/.aws, ~/.nvm).
	"TestUserConfigNotWritableThroughBind": "the user's config file",
	"TestPasswdHomeConfigNotRead":          "the user's config file",
	"TestPublishDirSweptNotFollowed":       "the user's config file",
	"TestPlainTCPGitCredentials":           "~/.gitconfig",
	"TestPlantedSymlinkInSandboxHome":      "~/.config/git",
	"TestToolGuardAtBothHomes":             "~/.claude",
	"TestValueFileInToolDirAtBothHomes":    "~/.claude",
	"TestUserBindsHeldToMasks":             "~/.aws",
	"TestToolDirsKeepHostCopy":             "the tools' directories in the home",
	"TestToolInstallUnderToolDir":          "~/.nvm",
	// One recording server for all subtests, whose requests each subtest reads as
	// its own.
	"TestCredentialOnlyOverTLS":                       "one recording server",
	"TestKeptOverlappingSessionsAuditTheirOwn":        "one recording server",
	"TestKeptUndumpableClientKeepsItsCredential":      "one recording server",
	"TestKeptOverlappingSessionsKeepTheirCredentials": "one recording server",
	// One outside host for all subtests, each of which serves a git remote on its
	// port 8000.
	"TestGitBasicPlaceholder": "one git server port",
	"TestGitPushPolicy":       "one git server port",
	// A race by design (a swap loop against launches): it ran in lanes on a machine
	// loaded by other work, and lost the project's .git to its own loop.
	"TestGitDirSwap": "a timed race",
	// bwrap's host view masks every socket it finds on the host: the other lanes'
	// runs make and remove theirs under /var/tmp, and one removed while the view is
	// set up stops the run (as it must).
	"TestHostView":                  "the host view sees other runs' sockets",
	"TestSystemListThroughLinks":    "the host view sees other runs' sockets",
	"TestHostViewSocketAfterLaunch": "the host view sees other runs' sockets",
	"TestHostViewSocketVanishes":    "the host view sees other runs' sockets",
	// It counts the private socket directories of the test user's runs in /tmp,
	// which the other lanes' runs make too.
	"TestSocketDirFallbackHostile": "counts every run's socket directories",
	// One passwd home with one bait file, rewritten after each subtest's runs.
	"TestProjectHoldingPasswdHomeRefused": "one bait file",
	// It measures the peak memory of every process of the suite's binaries.
	"TestIndexReadBounded": "peak memory of all devsandbox processes",
}

// laneOf is the component a subtest of iso uses: its lane.
func laneOf(iso string) string {
	switch iso {
	case remoteDocker, tcpDocker:
		return "engine " + remoteEngine
	case localDocker:
		return "engine unix:///var/run/docker.sock"
	case rootlessDocker:
		return "engine " + rootlessEngine
	}
	return iso
}

// laneRuns are the names of the tests running their subtests in lanes now.
var laneRuns sync.Map

// inLanes runs f as a subtest of t per iso of isos (named iso), the subtests of
// different lanes at once, and returns when all have ended.
// The tests of sameAfterStart (remote_test.go) get no docker-remote subtest.
func inLanes(t *testing.T, isos []string, f func(t *testing.T, iso string)) {
	t.Helper()
	isos = remoteFor(t, isos)
	if !lanesFor(t) {
		for _, iso := range isos {
			t.Run(iso, func(t *testing.T) { f(t, iso) })
		}
		return
	}
	var order []string
	lanes := map[string][]string{}
	for _, iso := range isos {
		l := laneOf(iso)
		if _, ok := lanes[l]; !ok {
			order = append(order, l)
		}
		lanes[l] = append(lanes[l], iso)
	}
	if len(order) < 2 {
		for _, iso := range isos {
			t.Run(iso, func(t *testing.T) { f(t, iso) })
		}
		return
	}
	laneRuns.Store(t.Name(), true)
	defer laneRuns.Delete(t.Name())
	var wg sync.WaitGroup
	for _, l := range order {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, iso := range lanes[l] {
				t.Run(iso, func(t *testing.T) { f(t, iso) })
			}
		}()
	}
	wg.Wait()
}

// lanesFor says whether t's subtests may run in lanes: not when turned off, not for a
// test of oneLane, not inside a subtest already running in a lane.
func lanesFor(t *testing.T) bool {
	if os.Getenv(lanesEnv) == "0" {
		return false
	}
	name := t.Name()
	if _, ok := oneLane[strings.SplitN(name, "/", 2)[0]]; ok {
		return false
	}
	inside := false
	laneRuns.Range(func(k, _ any) bool {
		if strings.HasPrefix(name, k.(string)+"/") {
			inside = true
		}
		return !inside
	})
	return !inside
}

// TestOneLaneReasons: every test oneLane names is a test of this package, with a
// reason (a renamed test would run in lanes again, unnoticed).
func TestOneLaneReasons(t *testing.T) {
	tableNamesTests(t, "oneLane (lanes_test.go)", oneLane)
}

// TestLanesOverlap: subtests of different lanes run at once (each waits for the
// other to start), those of one lane one after the other, and inLanes returns only
// when all have ended.
func TestLanesOverlap(t *testing.T) {
	if os.Getenv(lanesEnv) == "0" {
		t.Skip(lanesEnv + "=0: the subtests run one after the other")
	}
	started := map[string]chan struct{}{"bwrap": make(chan struct{}), "krun": make(chan struct{})}
	var mu sync.Mutex
	var inEngine, most int
	ended := 0
	inLanes(t, []string{"bwrap", "krun", remoteDocker, tcpDocker}, func(t *testing.T, iso string) {
		switch iso {
		case "bwrap", "krun":
			close(started[iso])
			other := map[string]string{"bwrap": "krun", "krun": "bwrap"}[iso]
			select {
			case <-started[other]:
			case <-time.After(time.Minute):
				t.Fatalf("the %s subtest did not start while %s's ran: the lanes do not overlap", other, iso)
			}
		default: // one engine: one lane
			mu.Lock()
			inEngine++
			most = max(most, inEngine)
			mu.Unlock()
			<-started["bwrap"]
			mu.Lock()
			inEngine--
			mu.Unlock()
		}
		mu.Lock()
		ended++
		mu.Unlock()
	})
	if ended != 4 {
		t.Fatalf("inLanes returned with %d of 4 subtests ended", ended)
	}
	if most != 1 {
		t.Fatalf("%d subtests on one engine ran at once, want 1", most)
	}
}
