//go:build integration

package integration

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The docker isolator against a rootless engine: the test user's own dockerd, run
// through rootlesskit (scripts/setup-test-env.sh, rootless_engine), where a
// container's uid 0 is the test user and every other uid one of the user's
// subordinate ids. devsandbox recognises it by its socket (the user's) and runs the
// command as the container's root, with no capability (isolator/docker/rootless.go).
//
// The variant docker-rootless runs a focused set, not the whole suite: the tests
// that call withRootless, and this file's, whenever docker (this machine's engine,
// which builds the default image) is among DEVSANDBOX_IT_ISOLATORS. Naming
// docker-rootless there runs every test on it.
//
// This machine kind has no cgroup v2: the engine applies no limit, so every run on
// the variant gets --pids=0 (rootlessArgs), and TestRootlessLimitsRefused checks the
// refusal a run without it meets.
const rootlessDocker = "docker-rootless"

// rootlessEngine is the rootless engine's address, unless
// DEVSANDBOX_IT_ROOTLESS_ENGINE names another.
var rootlessEngine = cmp.Or(os.Getenv("DEVSANDBOX_IT_ROOTLESS_ENGINE"), "unix:///var/lib/dsb-rootless/run/docker.sock")

// withRootless is isos with rootlessDocker added when this machine's docker variant
// is among them.
func withRootless(isos []string) []string {
	if slices.Contains(isos, localDocker) && !slices.Contains(isos, rootlessDocker) {
		return append(slices.Clone(isos), rootlessDocker)
	}
	return isos
}

// rootlessArgs is isolatorArgs for the variant: --isolator=docker at args[i], the
// rootless engine as DOCKER_HOST unless env names one, and --pids=0 unless the
// arguments set --pids (the engine here cannot apply a limit).
func rootlessArgs(args, env []string, i int) ([]string, []string) {
	args[i] = "--isolator=docker"
	end := slices.Index(args, "--")
	if end < 0 {
		end = len(args)
	}
	if !slices.ContainsFunc(args[:end], func(a string) bool { return a == "--pids" || strings.HasPrefix(a, "--pids=") }) {
		args = slices.Insert(args, i+1, "--pids=0")
	}
	if !slices.ContainsFunc(env, func(e string) bool { return strings.HasPrefix(e, "DOCKER_HOST=") }) {
		env = append(slices.Clip(env), "DOCKER_HOST="+rootlessEngine)
	}
	return args, env
}

// forEachDockerRootless is forEachDocker with the rootless variant added when this
// machine's docker variant runs (withRootless).
func forEachDockerRootless(t *testing.T, f func(t *testing.T, iso string)) {
	t.Helper()
	inLanes(t, withRootless(dockerVariants()), func(t *testing.T, iso string) {
		requireEngine(t, iso)
		f(t, iso)
	})
}

// setupRootlessEngine checks that the rootless engine answers, is rootless and is
// the test user's (its socket is theirs: what devsandbox recognises it by), and makes
// the default image in it; it returns why the variant cannot run ("" when it can).
func setupRootlessEngine() string {
	path := strings.TrimPrefix(rootlessEngine, "unix://")
	fi, err := os.Stat(path)
	if err != nil {
		return fmt.Sprintf("no rootless engine at %s (scripts/setup-test-env.sh starts it): %v", rootlessEngine, err)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); !ok || int(st.Uid) != it.uid {
		return fmt.Sprintf("the rootless engine's socket %s is not the test user's (uid %d)", path, it.uid)
	}
	out, err := dockerCmd(rootlessDocker, "info", "--format", "{{.SecurityOptions}}").CombinedOutput()
	if err != nil {
		return fmt.Sprintf("the rootless engine at %s does not answer: %v: %s", rootlessEngine, err, bytes.TrimSpace(out))
	}
	if !bytes.Contains(out, []byte("name=rootless")) {
		return fmt.Sprintf("the engine at %s is not rootless (security options %s)", rootlessEngine, bytes.TrimSpace(out))
	}
	return setupEngine(rootlessDocker)
}

// forRootless runs f as the docker-rootless subtest.
func forRootless(t *testing.T, f func(t *testing.T, iso string)) {
	t.Helper()
	t.Run(rootlessDocker, func(t *testing.T) {
		requireEngine(t, rootlessDocker)
		f(t, rootlessDocker)
	})
}

// What the sandbox writes in the project is the user's: the host user edits and
// removes it, and the sandbox edits the user's files. On a rootless engine, main ran
// the command as the user's uid, a subordinate id there: the init could not even look
// into the sandbox home (the container's root's) and every run failed (125,
// "maskdir …/.ssh is missing: permission denied"); had it run, the files would have
// been a subordinate id's, which the user can neither change nor remove.
func TestSandboxWritesAreTheUsers(t *testing.T) {
	forEachIsolatorOf(t, withRootless(isolators()), func(t *testing.T, iso string) {
		p := newProject(t)
		p.write("proj/host.txt", "host\n")
		script := `set -e; echo made > made.txt; mkdir -p d/e; echo deep > d/e/f; echo sandbox >> host.txt; chmod 0600 made.txt; echo ok`
		if refusesAnchors(iso) {
			wantAnchorsRefused(t, p.sandbox(iso, nil, script))
			return
		}
		if out := p.mustSandbox(iso, nil, script); out != "ok\n" {
			t.Fatalf("sandbox:\n%s", out)
		}
		var owners []string
		for _, rel := range []string{"made.txt", "d", "d/e", "d/e/f", "host.txt"} {
			fi, err := os.Lstat(filepath.Join(p.dir, rel))
			if err != nil {
				t.Fatal(err)
			}
			st := fi.Sys().(*syscall.Stat_t)
			if int(st.Uid) != it.uid || int(st.Gid) != it.gid {
				owners = append(owners, fmt.Sprintf("%s %d:%d", rel, st.Uid, st.Gid))
			}
		}
		if len(owners) > 0 {
			t.Errorf("files the sandbox wrote are not the user's (%d:%d): %v", it.uid, it.gid, owners)
		}
		out := asTestUser(t, `cd "$1" && echo host-edit >> made.txt && cat made.txt host.txt && rm -r made.txt d && ls`, p.dir)
		if out != "made\nhost-edit\nhost\nsandbox\nhost.txt\n" {
			t.Fatalf("the host user editing and removing what the sandbox wrote:\n%s", out)
		}
	})
}

// On a rootless engine the command is the container's root: the user's name, no
// capability in any set (a program it runs gains none), no_new_privs. What root owns
// in a container that the user does not own on the host is still out of reach:
// another uid for a file of the project (chown), a device (mknod), a new user
// namespace or mount, /proc/sys, the protected files of the project (.git/config,
// .git/hooks, a mask) and the read-only root file system with the init. A setuid bit
// it sets makes a file setuid to the user alone.
func TestRootlessContainerRoot(t *testing.T) {
	forRootless(t, func(t *testing.T, iso string) {
		p := newProject(t)
		p.write("proj/.env", "TOKEN=bait\n")
		p.write("proj/a.txt", "a\n")
		script := `
try() { if "$@" 2>/dev/null; then echo "ALLOWED $*"; else echo "refused $*"; fi; }
echo "id $(id -u):$(id -g) $(id -un)"
grep -E '^(CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs):' /proc/self/status | tr -s '\t ' ' '
try chown 1234 a.txt
try chgrp 1234 a.txt
try chown 0:0 .env
try mknod dev c 1 3
try sh -c 'echo x > .git/config'
try chmod 0666 .git/config
try sh -c 'echo x > .git/hooks/pre-commit'
try chmod 0777 .git/hooks
try sh -c 'echo x > .env'
try chmod 0666 .env
try sh -c 'echo x > /etc/passwd'
try chmod 4755 /run/devsandbox/init
try sh -c 'echo x > /etc/hosts'
try sh -c 'echo 1 > /proc/sys/kernel/core_pattern'
try unshare -U true
try mount -t tmpfs t /mnt
touch suid && chmod 6755 suid && echo suid-set
cat .env; echo end`
		out := p.mustSandbox(iso, nil, script)
		want := `id 0:0 ` + it.name + `
CapInh: 0000000000000000
CapPrm: 0000000000000000
CapEff: 0000000000000000
CapBnd: 0000000000000000
CapAmb: 0000000000000000
NoNewPrivs: 1
refused chown 1234 a.txt
refused chgrp 1234 a.txt
refused chown 0:0 .env
refused mknod dev c 1 3
refused sh -c echo x > .git/config
refused chmod 0666 .git/config
refused sh -c echo x > .git/hooks/pre-commit
refused chmod 0777 .git/hooks
refused sh -c echo x > .env
refused chmod 0666 .env
refused sh -c echo x > /etc/passwd
refused chmod 4755 /run/devsandbox/init
refused sh -c echo x > /etc/hosts
refused sh -c echo 1 > /proc/sys/kernel/core_pattern
refused unshare -U true
refused mount -t tmpfs t /mnt
suid-set
end
`
		if out != want {
			t.Fatalf("as the container's root on a rootless engine:\n%s\nwant:\n%s", out, want)
		}
		for rel, mode := range map[string]os.FileMode{"a.txt": 0, "suid": os.ModeSetuid | os.ModeSetgid} {
			fi, err := os.Lstat(filepath.Join(p.dir, rel))
			if err != nil {
				t.Fatal(err)
			}
			st := fi.Sys().(*syscall.Stat_t)
			if int(st.Uid) != it.uid || int(st.Gid) != it.gid || fi.Mode()&(os.ModeSetuid|os.ModeSetgid) != mode {
				t.Errorf("%s on the host: %v %d:%d, want the user's (%d:%d)", rel, fi.Mode(), st.Uid, st.Gid, it.uid, it.gid)
			}
		}
		if b, _ := os.ReadFile(p.path("proj/.git/config")); !strings.HasPrefix(string(b), "[core]") {
			t.Errorf(".git/config changed: %q", b)
		}
	})
}

// A rootless engine without cgroup controllers drops limits without a warning: a
// run with the default limits.pids is refused (125), naming the limit and the fix,
// and runs nothing.
func TestRootlessLimitsRefused(t *testing.T) {
	forRootless(t, func(t *testing.T, iso string) {
		p := newProject(t)
		r := p.sandbox(iso, []string{"--pids=4096"}, "echo ran")
		if r.code != 125 || r.stdout != "" || !strings.Contains(r.stderr, "the rootless docker engine cannot apply limits.pids = 4096") || !strings.Contains(r.stderr, "--pids=0") {
			t.Fatalf("limits on a rootless engine without cgroups: want the run refused (125), naming the limit and the fix:\n%s", r)
		}
	})
}

// A kept container is reused on a rootless engine; `sandboxes rm` then removes it,
// its volumes and the sandbox home, whose files are all the user's (nothing to hand
// back through the engine, nothing of a subordinate id's); `sandboxes prune` removes
// a gone project's home and what its runs left in the engine.
func TestRootlessKeptAndRemoved(t *testing.T) {
	forRootless(t, func(t *testing.T, iso string) {
		p := newProject(t)
		keep := []string{"--keep-container", "--egress=none"}
		p.mustSandbox(iso, keep, `echo first > /tmp/marker; mkdir -p ~/.cache/x; echo c > ~/.cache/x/f`)
		ids := projectContainers(t, iso, p, false)
		if len(ids) != 1 {
			t.Fatalf("want one running kept container, have %v", ids)
		}
		if out := p.mustSandbox(iso, keep, `cat /tmp/marker; id -u`); out != "first\n0\n" {
			t.Fatalf("second run did not reuse the container as its root: %q", out)
		}
		if again := projectContainers(t, iso, p, false); len(again) != 1 || again[0] != ids[0] {
			t.Fatalf("container changed between runs: %v then %v", ids, again)
		}
		home := filepath.Join(it.home, ".local/share/devsandbox", p.name())
		if out := asTestUser(t, `find "$1" ! -user "$2" | head -n 3`, home, it.name); out != "" {
			t.Errorf("sandbox home holds entries not the user's:\n%s", out)
		}
		r := run(t, p.dir, []string{"DOCKER_HOST=" + rootlessEngine}, "", "sandboxes", "rm", p.name())
		if r.code != 0 {
			t.Fatalf("sandboxes rm:\n%s", r)
		}
		if left := projectContainers(t, iso, p, true); len(left) != 0 {
			t.Errorf("containers left after sandboxes rm: %v", left)
		}
		if _, err := os.Lstat(home); !os.IsNotExist(err) {
			t.Errorf("sandbox home %s left after sandboxes rm: %v", home, err)
		}

		gone := newProject(t)
		gone.mustSandbox(iso, []string{"--egress=none"}, `mkdir -p ~/.cache/y; echo c > ~/.cache/y/f; echo x > made.txt`)
		goneHome := filepath.Join(it.home, ".local/share/devsandbox", gone.name())
		if err := os.RemoveAll(gone.dir); err != nil {
			t.Fatal(err)
		}
		r = run(t, it.home, []string{"DOCKER_HOST=" + rootlessEngine}, "", "sandboxes", "prune")
		if r.code != 0 {
			t.Fatalf("sandboxes prune:\n%s", r)
		}
		if _, err := os.Lstat(goneHome); !os.IsNotExist(err) {
			t.Errorf("a gone project's sandbox home %s left after sandboxes prune: %v\n%s", goneHome, err, r)
		}
		if left := dockerAt(t, iso, "volume", "ls", "-q", "--filter", "label=dev.devsandbox.project="+strings.TrimPrefix(gone.name(), "proj-")); left != "" {
			t.Errorf("a gone project's volumes left after sandboxes prune: %s", left)
		}
	})
}

// doctor names the rootless engine, how the command runs there and that this
// engine's limits cannot be applied.
func TestRootlessDoctor(t *testing.T) {
	forRootless(t, func(t *testing.T, iso string) {
		p := newProject(t)
		r := run(t, p.dir, []string{"DOCKER_HOST=" + rootlessEngine}, "", "--isolator=docker", "doctor")
		for _, want := range []string{
			fmt.Sprintf("rootless engine, run by you: the sandboxed command runs as the container's root, which is you (uid %d) on this host", it.uid),
			"docker rootless limits",
		} {
			if !strings.Contains(r.stdout+r.stderr, want) {
				t.Errorf("doctor does not say %q:\n%s", want, r)
			}
		}
	})
}

// Tools that check who they run as: on a rootless engine the command is uid 0, named
// as the user, with the user's USER and HOME; elsewhere it is the user's uid. The
// claude binding sets IS_SANDBOX=1 on every isolator, so Claude Code's root guard
// (bypass-permissions mode refused to uid 0 unless IS_SANDBOX is 1; the script does
// what its cli.js does) lets it run in bypass mode on every isolator.
func TestRootlessToolsSeeTheUser(t *testing.T) {
	forEachIsolatorOf(t, withRootless(isolators()), func(t *testing.T, iso string) {
		p := newProject(t)
		cfg := p.writeConfig(iso, "claude.toml", "[tools.claude]\nenabled = true\n")
		script := `echo "$(id -u) $(id -un) USER=$USER HOME=$HOME IS_SANDBOX=$IS_SANDBOX"
if [ "$(id -u)" = 0 ] && [ "$IS_SANDBOX" != 1 ]; then echo bypass refused; else echo bypass allowed; fi`
		out := p.mustSandbox(iso, []string{"--egress=none", "--config", cfg}, script)
		uid := it.uid
		if iso == rootlessDocker {
			uid = 0
		}
		want := fmt.Sprintf("%d %s USER=%s HOME=%s IS_SANDBOX=1\nbypass allowed\n", uid, it.name, it.name, containerHome(iso))
		if out != want {
			t.Fatalf("who the command is:\n%s\nwant:\n%s", out, want)
		}
	})
}

// On a rootless engine the command is the container's uid 0, the user: what carries
// the ssh agent into the container must be out of its reach. Run as the same uid
// (s26), the command replaced the carrier's socket, planted beside it and wrote
// straight onto the carrier's output (REPLACED, PLANTED, HIJACK … wrote). The carrier
// runs as another container uid (a subordinate id on the host), its socket in a
// tmpfs of that uid's: with forwarding on, by default (the stream) and with
// docker.agent_bind, one-shot and in a kept container's later sessions, every attempt
// on the socket, its directory, the carrier's process (signals, ptrace, /proc/PID/mem,
// its descriptors, pidfd) and its executable is refused, and ssh-add lists the key.
func TestRootlessAgent(t *testing.T) {
	forRootless(t, func(t *testing.T, iso string) {
		p := newProject(t)
		ctx, cancel := context.WithTimeout(t.Context(), 180*time.Second)
		defer cancel()
		sock, asUser := hostAgent(ctx, t, p)
		p.write("proj/hostkey.pub", addHostKey(t, p, asUser))
		p.chownUp(p.path("proj/hostkey.pub"))
		if out, err := exec.CommandContext(ctx, "gcc", "-static", "-O", "-o", p.path("proj/carrierattack"), "testdata/carrierattack.c").CombinedOutput(); err != nil {
			needOrSkip(t, "gcc -static: %v\n%s", err, out)
		}
		p.chownUp(p.path("proj/carrierattack"))
		before, err := asUser("ssh-add", "-L").Output()
		if err != nil {
			t.Fatalf("ssh-add -L: %v", err)
		}
		env := []string{"SSH_AUTH_SOCK=" + sock, "XDG_RUNTIME_DIR=" + runtimeDir()}
		script := agentPathScript + `
	./carrierattack
	cp /bin/true /tmp/x 2>/dev/null; cp /tmp/x /run/devsandbox/init 2>/dev/null && echo REPLACED_INIT
	mv /run/devsandbox/init /tmp/init 2>/dev/null && echo REPLACED_INIT
	ssh-add -l | grep -q HOSTKEY && echo LISTS_AFTER
	ssh -G localhost >/dev/null && echo SSH_READS_ITS_CONFIG
	true`
		optIn := "--config=" + p.writeConfig(iso, "agentbind.toml", "[docker]\nagent_bind = true\n")
		session := func(what, way string, flags ...string) {
			t.Helper()
			args := append([]string{"--isolator=" + iso, "--debug", "--egress=none"}, flags...)
			r := run(t, p.dir, env, "", append(args, "--", "/bin/sh", "-c", script)...)
			var lines, attacks, uids []string
			carriers := 0
			for _, l := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
				f := strings.Fields(l)
				switch {
				case len(f) == 3 && f[0] == "CARRIER":
					carriers++
					uids = append(uids, f[2])
					if f[2] == "0" {
						t.Errorf("%s: the agent's carrier (pid %s) runs as the container's uid 0, the command's:\n%s", what, f[1], r)
					}
				case len(f) == 4 && f[0] == "ATTACK":
					attacks = append(attacks, f[2])
					if f[3] != "refused" {
						t.Errorf("%s: the command's attempt %s on the agent's carrier (pid %s) succeeded", what, f[2], f[1])
					}
				default:
					lines = append(lines, l)
				}
			}
			if r.code != 0 || strings.Join(lines, "\n") != "LISTS\nSTILL_LISTS\nLISTS_AFTER\nSSH_READS_ITS_CONFIG" {
				t.Errorf("%s: want the key listed, none removed, the socket, its directory and the init neither replaced nor planted in, and ssh reading the generated ~/.ssh/config (the container root's: a subordinate id's was 'Bad owner'):\n%s", what, r)
			}
			if !strings.Contains(r.stderr, way+" ") {
				t.Errorf("%s: the agent did not take the %s (--debug timings):\n%s", what, strings.TrimPrefix(way, "agent "), r)
			}
			// One carrier on the stream, the session's own (an earlier session's
			// ended with it), none on the bound relay.
			if want := map[string]int{"agent stream": 1, "agent bound": 0}[way]; carriers != want || len(attacks) < 15*carriers {
				t.Errorf("%s: the %s: %d carriers in the container, %d attempts on them, want %d (the test proves nothing, or an earlier session's carrier outlived it):\n%s", what, strings.TrimPrefix(way, "agent "), carriers, len(attacks), want, r)
			}
			t.Logf("%s: the %s, %d carrier(s) (uids %v), %d attempts on them refused", what, strings.TrimPrefix(way, "agent "), carriers, uids, len(attacks))
			if after, err := asUser("ssh-add", "-L").Output(); err != nil || string(after) != string(before) {
				t.Errorf("%s: the host agent's keys changed: before\n%safter (%v)\n%s", what, before, err, after)
			}
		}
		// The engine is local (a socket of this host): with docker.agent_bind it
		// binds the relay, whose socket is a read-only mount point.
		session("default, one-shot", "agent stream")
		session("agent_bind, one-shot", "agent bound", optIn)
		session("agent_bind, kept, first session", "agent bound", optIn, "--keep-container")
		session("agent_bind, kept, second session", "agent bound", optIn, "--keep-container")
		session("default, kept, first session", "agent stream", "--keep-container")
		session("default, kept, second session", "agent stream", "--keep-container")
	})
}

// Podman's Docker-compatible API (rootless podman's `podman system service`, the
// user's socket): a docker run there failed on loading the derived image, and would
// have run the command as a subordinate id. It is recognised (its version's
// Components name the Podman Engine) and refused (125) naming --isolator krun and
// bwrap; doctor's docker engine row says the same.
func TestRootlessPodmanAPIRefused(t *testing.T) {
	if !slices.Contains(isolators(), localDocker) {
		t.Skip("docker is not among DEVSANDBOX_IT_ISOLATORS")
	}
	ip := newIsolatedPodman(t)
	p := newProject(t)
	env := []string{"DOCKER_HOST=unix://" + ip.sock}
	want := "the engine at unix://" + ip.sock + " is Podman"
	r := run(t, p.dir, env, "", "--isolator=docker", "--", "/bin/sh", "-c", "echo ran")
	if r.code != 125 || r.stdout != "" || !strings.Contains(r.stderr, want) || !strings.Contains(r.stderr, "--isolator krun") || !strings.Contains(r.stderr, "--isolator bwrap") {
		t.Errorf("a docker run on podman's API: want it refused (125) naming podman and the other isolators:\n%s", r)
	}
	r = run(t, p.dir, env, "", "--isolator=docker", "doctor")
	if !strings.Contains(r.stdout, "docker engine") || !strings.Contains(r.stdout, want) {
		t.Errorf("doctor on podman's API: want the docker engine row to name it:\n%s", r)
	}
}
