//go:build integration

package integration

import (
	"bytes"
	"cmp"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The docker isolator runs in two variants, each a name in DEVSANDBOX_IT_ISOLATORS:
// "docker", against this machine's engine, and "docker-remote", against the stand-in
// for Docker Desktop and remote engines that scripts/setup-test-env.sh starts: a
// second dockerd that cannot see this machine's /tmp and /run (so nothing devsandbox
// places there can be bound into its containers), sees homes and projects, and has a
// bridge of its own. The variants have the same expectations; devsandbox runs with
// --isolator=docker either way, and DOCKER_HOST names the stand-in for the second.
const (
	localDocker  = "docker"
	remoteDocker = "docker-remote"
	// defaultRemoteEngine is the stand-in's address, unless
	// DEVSANDBOX_IT_REMOTE_ENGINE names another (a stand-in of another version).
	defaultRemoteEngine = "unix:///var/lib/dsb-remote/docker.sock"
)

// remoteEngine is the stand-in's address.
var remoteEngine = cmp.Or(os.Getenv("DEVSANDBOX_IT_REMOTE_ENGINE"), defaultRemoteEngine)

// engineAPI is, per docker variant, the API version its engine speaks (setupEngine).
var engineAPI = map[string]string{}

// isDocker reports whether iso is a variant of the docker isolator.
func isDocker(iso string) bool {
	return iso == localDocker || iso == remoteDocker || iso == tcpDocker || iso == rootlessDocker
}

// engineOf is the engine address (DOCKER_HOST) of docker variant iso; for tcpDocker,
// the stand-in's socket, where root's docker CLI reaches the same engine.
func engineOf(iso string) string {
	if iso == remoteDocker || iso == tcpDocker {
		return remoteEngine
	}
	if iso == rootlessDocker {
		return rootlessEngine
	}
	return "unix:///var/run/docker.sock"
}

// engineReady is, per docker variant, why its tests cannot run ("" when they can).
var engineReady = map[string]string{localDocker: "not checked", remoteDocker: "not checked", tcpDocker: "not checked", rootlessDocker: "not checked"}

// dockerVariants are the docker variants DEVSANDBOX_IT_ISOLATORS names; "docker" when
// it names none (the docker-only tests run against this machine's engine at least).
func dockerVariants() []string {
	var vs []string
	for _, iso := range isolators() {
		if isDocker(iso) {
			vs = append(vs, iso)
		}
	}
	if len(vs) == 0 {
		vs = []string{localDocker}
	}
	return vs
}

// forEachDocker runs f as a subtest per docker variant, for the tests of what only
// the docker isolator has (kept containers, the engine's housekeeping).
func forEachDocker(t *testing.T, f func(t *testing.T, iso string)) {
	t.Helper()
	inLanes(t, dockerVariants(), func(t *testing.T, iso string) {
		requireEngine(t, iso)
		f(t, iso)
	})
}

// withoutRemote is isos without the stand-in's variant.
func withoutRemote(isos []string) []string {
	return slices.DeleteFunc(slices.Clone(isos), func(iso string) bool { return iso == remoteDocker })
}

// isolatorArgs turns a test's devsandbox arguments into the real ones: the flag
// --isolator=docker-remote becomes --isolator=docker, with the stand-in as
// DOCKER_HOST unless env names an engine already (docker-tcp: the stand-in over TLS,
// tcpEnv); a run on a variant of
// elsewhereVariants gets elsewhereConfig as its --config file unless the arguments
// name one or env another config directory.
func isolatorArgs(args, env []string) ([]string, []string) {
	end := slices.Index(args, "--")
	if end < 0 {
		end = len(args)
	}
	i := slices.IndexFunc(args[:end], func(a string) bool { return strings.HasPrefix(a, "--isolator=") })
	if i < 0 {
		return args, env
	}
	iso := strings.TrimPrefix(args[i], "--isolator=")
	own := slices.ContainsFunc(args[:end], func(a string) bool { return a == "--config" || strings.HasPrefix(a, "--config=") }) ||
		slices.ContainsFunc(env, otherConfigHome)
	args = slices.Clone(args)
	if !own && slices.Contains(elsewhereVariants(), iso) {
		args = slices.Insert(args, i+1, "--config="+elsewhereConfig)
	}
	if iso == rootlessDocker {
		return rootlessArgs(args, env, i)
	}
	if iso != remoteDocker && iso != tcpDocker {
		return args, env
	}
	args[i] = "--isolator=docker"
	if !slices.ContainsFunc(env, func(e string) bool { return strings.HasPrefix(e, "DOCKER_HOST=") }) {
		if iso == tcpDocker {
			env = append(slices.Clip(env), tcpEnv()...)
		} else {
			env = append(slices.Clip(env), "DOCKER_HOST="+remoteEngine)
		}
	}
	return args, env
}

// otherConfigHome reports whether e names an XDG_CONFIG_HOME other than the
// throwaway home's, where the test user's config file is not.
func otherConfigHome(e string) bool {
	v, ok := strings.CutPrefix(e, "XDG_CONFIG_HOME=")
	return ok && v != filepath.Join(it.home, ".config")
}

// setupEngine checks docker variant iso's engine and makes the default image
// (docker.image's default, devsandbox/default:<version>) in it from the local test
// base image, which scripts/setup-test-env.sh imports without a registry. It runs
// once, as root.
func setupEngine(iso string) string {
	helper := filepath.Join(filepath.Dir(it.bin), "devsandbox-docker")
	if _, err := os.Stat(helper); err != nil {
		return "devsandbox-docker was not built"
	}
	out, err := dockerCmd(iso, "version", "--format", "{{.Server.APIVersion}}").CombinedOutput()
	if err != nil {
		return fmt.Sprintf("no docker engine at %s (scripts/setup-test-env.sh starts it): %v: %s", engineOf(iso), err, bytes.TrimSpace(out))
	}
	engineAPI[iso] = string(bytes.TrimSpace(out))
	base := os.Getenv("DEVSANDBOX_IT_BASE_IMAGE")
	if base == "" {
		base = "devsandbox-test/debian:3"
	}
	cmd := exec.Command(it.bin, "image", "build", "--base", base)
	cmd.Dir = "/"
	cmd.Env = []string{"HOME=/root", "PATH=/usr/local/bin:/usr/bin:/bin", "DOCKER_HOST=" + engineOf(iso)}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Sprintf("building the default image from %s at %s: %v: %s", base, engineOf(iso), err, out)
	}
	return ""
}

// requireEngine skips without docker variant iso's engine and its test image, and
// fails in CI.
func requireEngine(t *testing.T, iso string) {
	t.Helper()
	if why := engineReady[iso]; why != "" {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is required in CI: %s", iso, why)
		}
		t.Skip(why)
	}
}

// dockerCmd is the docker CLI (as root) against docker variant iso's engine.
func dockerCmd(iso string, args ...string) *exec.Cmd {
	cmd := exec.Command("docker", args...)
	cmd.Env = append(os.Environ(), "DOCKER_HOST="+engineOf(iso))
	return cmd
}

// dockerAt runs the docker CLI against docker variant iso's engine and returns its
// trimmed output.
func dockerAt(t *testing.T, iso string, args ...string) string {
	t.Helper()
	out, err := dockerCmd(iso, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("docker %s (%s): %v: %s", strings.Join(args, " "), engineOf(iso), err, out)
	}
	return strings.TrimSpace(string(out))
}

// refusesAnchors reports whether iso refuses a run with a mask inside a sub-directory
// of a read-write bind (the project, rw_binds). The directories on the way are bound
// onto themselves (anchors): an engine with API 1.45 or newer mounts each as a
// sub-path of a volume of the bind's top directory, which the engine resolves
// without following a link out of it; an older one only from the directory
// devsandbox pinned, which an engine that does not share this host's mount namespace
// cannot mount — an old stand-in, like an old remote engine, then fails the run (125)
// rather than bind by path.
func refusesAnchors(iso string) bool {
	return iso == remoteDocker && apiBefore(engineAPI[iso], "1.45")
}

// apiBefore reports whether API version v is older than min (an unreadable v is).
func apiBefore(v, min string) bool {
	var a1, a2, b1, b2 int
	if _, err := fmt.Sscanf(v, "%d.%d", &a1, &a2); err != nil {
		return true
	}
	_, _ = fmt.Sscanf(min, "%d.%d", &b1, &b2)
	return a1 < b1 || a1 == b1 && a2 < b2
}

// wantAnchorsRefused fails t unless r is that refusal: 125, nothing run, the reason
// named.
func wantAnchorsRefused(t *testing.T, r result) {
	t.Helper()
	if r.code != 125 || r.stdout != "" || !strings.Contains(r.stderr, "another mount namespace than this host's") {
		t.Fatalf("a mask inside a sub-directory of a read-write bind on an engine that cannot pin its directories: want the run refused (125), naming why:\n%s", r)
	}
}
