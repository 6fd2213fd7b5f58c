//go:build integration

package integration

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The docker-remote variant (the stand-in engine, which shares no /tmp or /run with
// this host: engine_test.go) differs from the local engine's only where devsandbox
// takes a remote engine's branch, which engineaddr.Address.Local decides (false for
// the stand-in: a relayed or tcp:// engine is the same):
//
//   - the sandbox home is an engine volume (run.go HomeVolume, volume.go, helper.go
//     Placement: the embed view, --dry-run), made and chowned by a helper container
//     made from the image, and removed by `sandboxes rm`;
//   - the sources are not pinned: the run checks the destinations
//     (isolator.CheckDestinations, Stub.CheckHost), records the sources' identities
//     (pin.Record, Gone) and sends every file a sandbox can swap, read now through
//     remoteSources, as content (viaContent); a read-only directory too unless the
//     engine mounts sub-paths (API 1.45; anchors: engineaddr.RefuseAnchors);
//   - over plain TCP, a credential in a file sent by content is refused
//     (RefuseClearFiles);
//   - the project is recorded for `sandboxes list` and prune (isolator.RecordProject);
//   - the shipped programs' architecture is the engine's (ServerVersion);
//   - the companion refuses the engine host's addresses, read in a container on that
//     host's network, not this host's (companionRequest, engineHostAddresses), and an
//     allowed name resolving to one fails an allowlist launch;
//   - the ssh agent takes the Engine API stream, never docker.agent_bind's bind
//     (asksAgentBind); no rootless handling (ownEngine);
//   - doctor's engine files row (filesRow).
//
// In this suite the variant also runs with its containers' home elsewhere than the
// host home (elsewhereVariants), as docker-tcp and krun do.
//
// Everything else is the same code once the container runs: the init and the
// command's process control, the streams and the terminal, the syscall policy and
// the limits, the firewall the in-engine helper renders, the companion's proxy and its
// credentials. sameAfterStart names the tests whose assertions are all of that: they
// get no docker-remote subtest (the docker variant and, where it runs, docker-rootless
// and docker-tcp check the same code). A test that checks anything a remote run ships
// or takes back (a file written back, a mask, a secret file, the home, a tool's
// directory, the binds, /etc/hosts, a kept container's volumes, what the watch
// quarantines) or any branch above keeps the variant, and so does one in doubt.
//
// One thing the variant has that the table gives up for these tests: the stand-in is
// dockerd 26 (API 1.45), this machine's engine dockerd 20.10 (scripts/setup-test-env.sh);
// the rootless engine is dockerd 26 too, and runs the tests withRootless names.

// remoteEnv, set to "all", gives every test its docker-remote subtest again.
const remoteEnv = "DEVSANDBOX_IT_REMOTE"

// sameAfterStart are the tests that run no docker-remote subtest, each with why.
var sameAfterStart = map[string]string{
	// Process control: the init's and devsandbox's, the same on both engines.
	"TestExitCodes":                    "exit codes: the init's, passed back through the engine's wait",
	"TestSignalsReachCommand":          "signals: devsandbox to the init through the attached stream",
	"TestKill9TakesTreeDown":           "kill -9: the init sees its host gone",
	"TestDaemonEndsWithTheRun":         "an orphan ends with the init",
	"TestDockerKill9LeavesNoContainer": "kill -9: the container's removal",
	"TestDockerExecDiesWithClient":     "kept exec processes die with their client",
	"TestKeptContainerSurvivors":       "a kept session's processes end with it (the keeper)",
	"TestJobControl":                   "job control: the init's stop and continue",
	"TestJobControlInnerStop":          "job control: the init's stop and continue",
	"TestJobControlSlowStop":           "job control: the init's stop bound",
	"TestJobControlKept":               "job control in a kept session (docker-rootless runs dockerd 26)",
	"TestJobControlEndedAtStop":        "job control: Ctrl-Z after the command ended, the init's report",
	// The streams and the terminal: the init's framing and devsandbox's relay.
	"TestInteractivePty":              "the relayed pty",
	"TestStdinTerminal":               "the relayed terminal's input",
	"TestPlainTerminalFiltered":       "the output filter on the relayed streams",
	"TestPlainTerminalKeepsBehaviour": "the relayed streams' ends and exit status",
	"TestPlainTerminalSignal":         "SIGINT through the relay",
	"TestPlainTerminalIoctls":         "the terminal is no descriptor of the container's",
	"TestPlainTerminalPager":          "the command's pty (bwrap) or its pipes",
	"TestPlainPipeUnchanged":          "output to a pipe is the command's bytes",
	"TestPtyEscapeFiltered":           "the output filter on the relayed pty",
	"TestOneFileKeepsOrder":           "the init's one pipe for stdout and stderr",
	"TestOnePipeKeepsOrder":           "the init's one pipe for stdout and stderr",
	"TestBypassTerminalInjection":     "TIOCSTI: the syscall policy and the relayed pty",
	// The syscall policy, capabilities and limits: the container's config.
	"TestBypassKernelSurface":               "the syscall policy",
	"TestBypassNestedUserNamespace":         "the syscall policy",
	"TestBypassIOUring":                     "the syscall policy",
	"TestBypassSocketFamilies":              "the syscall policy",
	"TestBypassPtrace":                      "the pid namespace and the syscall policy",
	"TestBypassProcWrites":                  "/proc in the container",
	"TestBypassForkStorm":                   "the pids limit",
	"TestBypassMemoryHog":                   "the memory limit and its report",
	"TestDefaultPidsLimit":                  "the pids limit",
	"TestTmpSizeBoundsTmp":                  "the /tmp tmpfs's size",
	"TestContainerCommandHoldsNoCapability": "the command's capabilities (docker-rootless runs dockerd 26)",
	"TestInitUnreachable":                   "the init's dumpability (docker-rootless runs dockerd 26)",
	"TestPolicyKeepsDevToolsWorking":        "the syscall policy with debuggers",
	"TestImageTmpWritable":                  "the /tmp tmpfs's mode",
	"TestTmpKinds":                          "the /tmp tmpfs",
	"TestPrivateTmp":                        "the /tmp tmpfs (docker-tcp, a remote engine, runs it)",
	// The companion's proxy: its policy, credentials and audit, the same program
	// in the same container on both engines (the addresses it refuses, which differ,
	// are TestEgressReachability's and TestCompanionRefusesEngineHostAddresses').
	"TestAuditLogSurvivesFlood":                       "the proxy's audit budget",
	"TestProxyAuditLogFlushed":                        "the proxy's audit relay",
	"TestProxyAuditFileEscapes":                       "the proxy's audit encoding",
	"TestMITMCredentialInjection":                     "the proxy's MITM and credential swap",
	"TestMITMWebSocketH2":                             "the proxy's MITM and credential swap",
	"TestPlaceholderReflected":                        "the proxy's credential swap",
	"TestBypassProxySmuggling":                        "the proxy's host parsing",
	"TestCredentialOnlyOverTLS":                       "the proxy's credential swap",
	"TestProxyRefusesAzureWireServer":                 "the proxy's metadata addresses",
	"TestDockerAuditSurvivesKill9":                    "the companion's audit relay",
	"TestKeptOverlappingSessionsAuditTheirOwn":        "the kept companion's sessions",
	"TestKeptOverlappingSessionsKeepTheirCredentials": "the kept companion's sessions",
	"TestKeptUndumpableClientKeepsItsCredential":      "the keeper's client attribution",
	"TestLogsEscapeFormatCharacters":                  "the proxy's audit encoding",
	"TestDockerProxyRootsOnAnyImage":                  "the companion's certificate roots",
	"TestCompanionLeftoversEndWithTheirSession":       "the kept companion's processes (docker-rootless runs dockerd 26)",
	"TestCompanionKeepsNothingForNextSession":         "the kept companion's root file system (docker-rootless runs dockerd 26)",
	"TestImageEnvReachesNoDevsandboxProgram":          "the companion's environment (docker-rootless runs dockerd 26)",
	// The firewall the in-engine helper renders, by address.
	"TestBypassICMPAndUDPBeyondRules": "the firewall's rules (docker-rootless runs dockerd 26)",
	"TestEgressAllowlistDenyWins":     "the firewall's rules (docker-rootless runs dockerd 26)",
	"TestEgressFirewallGuarantees":    "the firewall helper (docker-rootless runs dockerd 26)",
	"TestEgressKill9":                 "the companion and container end with devsandbox",
	"TestDockerKeptEgress":            "kept sessions' egress through the companion, allowed by address (docker-rootless runs dockerd 26)",
	"TestEgressModes":                 "none and open networks (docker-tcp, a remote engine, runs it)",
	// The engine's housekeeping and images, by the same requests on both engines.
	"TestKeptIPCDoesNotOutliveTheSession": "the keeper's IPC clean-up",
	"TestDockerDerivedImageReuse":         "the derived image's lookup by content",
	"TestDockerDerivedImage":              "the derived image's cache",
	"TestImageUseRecorded":                "the image use record",
	"TestDockerKeptSweepsWhenDue":         "the sweep of stopped containers",
	"TestDockerLeftoverRemoved":           "the sweep of stopped containers",
	"TestImageBuildEscapesProgress":       "the build stream's escapes",
	"TestImageHealthcheckNeverRuns":       "no HEALTHCHECK in the companion, firewall helper and sandbox (docker-rootless runs dockerd 26)",
	"TestDockerPublishOnlyThroughEngine":  "the engine's port publishing",
	"TestPublish":                         "the engine's port publishing (docker-tcp, a remote engine, runs it)",
	// docker-tcp runs them whole: the same stand-in engine, remote too (by its
	// address's form), so every branch above but the socket's pinned listener.
	"TestHideDirs":           "docker-tcp, the stand-in over TLS, runs it whole: the same remote branches (masks, anchors as sub-paths, the home volume, the home elsewhere)",
	"TestSecretsNeverInArgv": "docker-tcp, the stand-in over TLS, runs it whole; secrets travel in the hello on every engine",
	// Host-side only.
	"TestLauncherCoreDumpHoldsNoSecret": "devsandbox's own core dump on the host",
	"TestEnvAllowlist":                  "the environment the init gets",
	"TestInitMessagesEscapeNames":       "the init's messages",
	"TestIndexReadBounded":              "the watch's read of the git index on the host",
}

// remoteFor is isos for t's subtests (remoteOf of t's top-level test); a value of
// DEVSANDBOX_IT_REMOTE other than "all" fails t.
func remoteFor(t *testing.T, isos []string) []string {
	t.Helper()
	out, err := remoteOf(t.Name(), os.Getenv(remoteEnv), isos)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// remoteOf is isos for the subtests of the test named name (a subtest's name too: its
// top-level test's counts) with DEVSANDBOX_IT_REMOTE at env: without docker-remote when
// the test is in sameAfterStart, unless env is "all".
func remoteOf(name, env string, isos []string) ([]string, error) {
	switch env {
	case "all":
		return isos, nil
	case "":
	default:
		return nil, fmt.Errorf("%s=%q: the one value is \"all\" (every test runs its docker-remote subtest)", remoteEnv, env)
	}
	if _, ok := sameAfterStart[strings.SplitN(name, "/", 2)[0]]; !ok {
		return isos, nil
	}
	return withoutRemote(isos), nil
}

// TestRemoteMatrixReasons: every test sameAfterStart names is a test of this package
// (the table cannot keep a renamed or removed test), with a reason.
func TestRemoteMatrixReasons(t *testing.T) {
	tableNamesTests(t, "sameAfterStart (remote_test.go)", sameAfterStart)
	all := []string{"bwrap", localDocker, remoteDocker, tcpDocker}
	for _, c := range []struct {
		name, env string
		want      []string
	}{
		{"TestExitCodes", "", []string{"bwrap", localDocker, tcpDocker}},
		{"TestExitCodes/sub", "", []string{"bwrap", localDocker, tcpDocker}},
		{"TestExitCodes", "all", all},
		{"TestProjectView", "", all},
		{"TestExitCodesX", "", all},
	} {
		got, err := remoteOf(c.name, c.env, all)
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("remoteOf(%s, %s=%q) = %v, %v; want %v", c.name, remoteEnv, c.env, got, err, c.want)
		}
	}
	if _, err := remoteOf("TestExitCodes", "none", all); err == nil {
		t.Errorf("remoteOf with %s=none: no error", remoteEnv)
	}
}

// tableNamesTests fails t unless every entry of table (a test's name to a reason)
// names a test of this package, with a reason: a table of tests cannot keep a renamed
// or removed one.
func tableNamesTests(t *testing.T, what string, table map[string]string) {
	t.Helper()
	files, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	decl := regexp.MustCompile(`(?m)^func (Test\w+)\(t \*testing\.T\)`)
	tests := map[string]bool{}
	for _, f := range files {
		if !strings.HasSuffix(f.Name(), "_test.go") {
			continue
		}
		b, err := os.ReadFile(f.Name())
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range decl.FindAllSubmatch(b, -1) {
			tests[string(m[1])] = true
		}
	}
	if len(tests) < 100 {
		t.Fatalf("found %d tests in the working directory: not the integration package's", len(tests))
	}
	var bad []string
	for name, why := range table {
		if !tests[name] {
			bad = append(bad, name+": no such test")
		}
		if strings.TrimSpace(why) == "" {
			bad = append(bad, name+": no reason")
		}
	}
	slices.Sort(bad)
	if len(bad) > 0 {
		t.Errorf("%s names:\n  %s", what, strings.Join(bad, "\n  "))
	}
}
