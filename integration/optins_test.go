//go:build integration

package integration

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The opt-ins that share more with the sandbox: what a hostile process inside can
// plant or change there that the host later follows, loads or runs.

// TestHostCacheOptIn: with sandbox.bind_host_cache the cache is the host's, shared
// read-write: what the sandbox writes there is the host's tools' (the residual risk
// the opt-in's user accepts, said by a warning on every run). devsandbox's own state
// must not be part of it: with XDG_STATE_HOME inside the cache, the bind showed the
// state directory read-write (the mask scan's cache, the proxy CA key, other sessions'
// /tmp), so a sandbox could plant in it what the next launch trusted. It is masked now,
// as in any user bind.
func TestHostCacheOptIn(t *testing.T) {
	forEachIsolatorOf(t, []string{"bwrap", localDocker}, func(t *testing.T, iso string) {
		p := newProject(t)
		cache := filepath.Join(p.root, "cache")
		state := filepath.Join(cache, "state")
		p.mkdir("cache/state")
		cfg := p.writeConfig(iso, "cfg.toml", "[sandbox]\nbind_host_cache = true\n")
		env := []string{"XDG_CACHE_HOME=" + cache, "XDG_STATE_HOME=" + state}
		own := filepath.Join(state, "devsandbox", p.name())
		t.Cleanup(func() { os.RemoveAll(filepath.Join(state, "devsandbox")) })
		r := run(t, p.dir, env, "", "--isolator="+iso, "--config="+cfg, "--", "/bin/sh", "-c",
			`echo shared > `+cache+`/planted; ls -A `+state+`/devsandbox; echo x > `+own+`/maskscan.cache && echo WROTE-STATE; true`)
		if r.code != 0 || strings.Contains(r.stdout, "WROTE-STATE") || strings.Contains(r.stdout, p.name()) {
			t.Errorf("devsandbox's state inside the shared cache: want it masked (empty, not writable):\n%s", r)
		}
		if !strings.Contains(r.stderr, "sandbox.bind_host_cache is on") {
			t.Errorf("no warning for bind_host_cache:\n%s", r)
		}
		// The residual risk: the cache itself is shared.
		if b, err := os.ReadFile(filepath.Join(cache, "planted")); err != nil || string(b) != "shared\n" {
			t.Errorf("the cache is not the host's (read %q, %v): the opt-in did nothing", b, err)
		}
	})
}

// TestDockerSocketOptInWarns: sandbox.docker_socket hands the sandbox the Docker
// daemon, root on its host: no test can plant less than that. The run says so.
func TestDockerSocketOptInWarns(t *testing.T) {
	requireBwrap(t)
	p := newProject(t)
	cfg := p.writeConfig("bwrap", "cfg.toml", "[sandbox]\ndocker_socket = true\n")
	r := run(t, p.dir, nil, "", "--isolator=bwrap", "--config="+cfg, "--", "true")
	if r.code != 0 || !strings.Contains(r.stderr, "sandbox.docker_socket is on") || !strings.Contains(r.stderr, "root on its host") {
		t.Errorf("docker_socket = true: want a warning that the daemon is root:\n%s", r)
	}
}

// TestSSHAgentOptIn: the ssh tool forwards the host's agent socket (when
// SSH_AUTH_SOCK names one). The sandbox cannot replace the socket the host's ssh
// uses (it sees only a bind of it), nor read key material, nor make the agent load a
// PKCS#11 provider it wrote (OpenSSH's agent loads providers only from its allowlist,
// /usr/lib*/* by default, since 9.3p2 and Debian's 9.2p1-2+deb12u1). The sandbox
// reaches the agent through the session's filtering relay (package sshagent): it can
// list the keys and sign with them, the residual risk while the run lasts, but not
// add, remove or lock keys; the host agent's keys are the same after the run. On
// docker the agent takes the Engine API stream by default; with docker.agent_bind the
// local engine binds the relay's socket instead, and every attack runs again through
// that bind.
func TestSSHAgentOptIn(t *testing.T) {
	forEachIsolator(t, func(t *testing.T, iso string) {
		sshAgentOptIn(t, iso, false)
		if iso == localDocker || iso == rootlessDocker {
			t.Run("agent_bind", func(t *testing.T) { sshAgentOptIn(t, iso, true) })
		}
	})
}

func sshAgentOptIn(t *testing.T, iso string, agentBind bool) {
	p := newProject(t)
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	sock, asUser := hostAgent(ctx, t, p)
	sockDir := filepath.Dir(sock)
	pub := addHostKey(t, p, asUser)
	// A library whose constructor leaves a mark: loaded by the agent, it runs as you.
	marker := p.path("agent/LOADED")
	p.write("evil.c", `#include <stdio.h>
__attribute__((constructor)) static void mark(void) { FILE *f = fopen("`+marker+`", "w"); if (f) fclose(f); }
`)
	if out, err := exec.CommandContext(ctx, "gcc", "-shared", "-fPIC", "-o", p.path("proj/evil.so"), p.path("evil.c")).CombinedOutput(); err != nil {
		needOrSkip(t, "gccNone: %v\n%s", err, out)
	}
	_ = os.Chmod(p.path("proj/evil.so"), 0o755)
	p.chownUp(p.path("proj/evil.so"))
	// The attacks on the agent's socket and on what relays it inside, static: the
	// images are Debian, as the host.
	if out, err := exec.CommandContext(ctx, "gcc", "-static", "-O", "-o", p.path("proj/agentattack"), "testdata/agentattack.c").CombinedOutput(); err != nil {
		needOrSkip(t, "gcc -static: %v\n%s", err, out)
	}
	p.chownUp(p.path("proj/agentattack"))
	p.write("proj/hostkey.pub", pub)
	p.chownUp(p.path("proj/hostkey.pub"))
	before, err := asUser("ssh-add", "-L").Output()
	if err != nil {
		t.Fatalf("ssh-add -L: %v", err)
	}
	// Each attempt on the agent says whether it succeeded; -x (lock) reads its
	// password, twice, from an askpass program. The socket directory is in
	// XDG_RUNTIME_DIR, as on a desktop: under /run, which the docker-remote stand-in
	// (like Docker Desktop and a remote engine) cannot see.
	env := []string{"SSH_AUTH_SOCK=" + sock, "XDG_RUNTIME_DIR=" + runtimeDir()}
	// The way the agent takes, which --debug names: docker's default is the stream.
	flags, way := []string{"--isolator=" + iso, "--debug"}, "agent stream"
	if agentBind {
		flags, way = append(flags, "--config="+p.writeConfig(iso, "agentbind.toml", "[docker]\nagent_bind = true\n")), "agent bound"
	}
	r := run(t, p.dir, env, "", append(flags, "--", "/bin/sh", "-c", `
		ls -A `+sockDir+` 2>/dev/null | sed 's/^/SEEN: /'
		rm -f "$SSH_AUTH_SOCK" 2>/dev/null && echo REPLACED
		ln -s / "$(dirname "$SSH_AUTH_SOCK")/planted" 2>/dev/null && echo PLANTED
		ssh-add -l | grep -q HOSTKEY && echo LISTS
		echo data >/tmp/msg && ssh-keygen -Y sign -f "$PWD/hostkey.pub" -n test /tmp/msg >/dev/null 2>&1 && test -s /tmp/msg.sig && echo SIGNS
		ssh-add -s "$PWD/evil.so" </dev/null >/dev/null 2>&1 && echo LOADED
		ssh-keygen -q -t ed25519 -N "" -C INSIDE -f /tmp/inside && ssh-add /tmp/inside </dev/null >/dev/null 2>&1 && echo ADDED
		ssh-add -d "$PWD/hostkey.pub" </dev/null >/dev/null 2>&1 && echo REMOVED_ONE
		ssh-add -D </dev/null >/dev/null 2>&1 && echo REMOVED_ALL
		printf '#!/bin/sh\necho pw\n' >/tmp/askpass && chmod +x /tmp/askpass
		SSH_ASKPASS=/tmp/askpass SSH_ASKPASS_REQUIRE=force ssh-add -x </dev/null >/dev/null 2>&1 && echo LOCKED
		./agentattack
		ssh-add -l | grep -q HOSTKEY && echo STILL_LISTS
		true`)...)
	agentAttacked(t, r)
	if isDocker(iso) && !strings.Contains(r.stderr, way+" ") {
		t.Errorf("the agent did not take the expected way (%q in the --debug timings):\n%s", way, r)
	}
	for _, bad := range []string{"SEEN:", "REPLACED", "LOADED", "ADDED", "REMOVED_ONE", "REMOVED_ALL", "LOCKED"} {
		if strings.Contains(r.stdout, bad) {
			t.Errorf("the forwarded agent: the sandbox saw the agent's directory, replaced its socket, loaded a provider it wrote, or added, removed or locked keys (%s):\n%s", bad, r)
		}
	}
	if isDocker(iso) && strings.Contains(r.stdout, "PLANTED") {
		t.Errorf("the command planted a link beside the agent's socket, in the directory of the container's process that serves it:\n%s", r)
	}
	if r.code != 0 || !strings.Contains(r.stdout, "LISTS") || !strings.Contains(r.stdout, "SIGNS") || !strings.Contains(r.stdout, "STILL_LISTS") {
		t.Errorf("the agent was not forwarded, or listing or signing failed (the test proves nothing):\n%s", r)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the host's ssh-agent loaded a library the sandbox wrote (its constructor ran)")
	}
	if _, err := os.Lstat(sock); err != nil {
		t.Errorf("the host's agent socket after the run: %v", err)
	}
	after, err := asUser("ssh-add", "-L").Output()
	if err != nil || string(after) != string(before) {
		t.Errorf("the host agent's keys changed: before\n%safter (%v)\n%s", before, err, after)
	}
	if !isDocker(iso) {
		return
	}
	defer func() {
		if after, err := asUser("ssh-add", "-L").Output(); err != nil || string(after) != string(before) {
			t.Errorf("the host agent's keys changed through a kept container: before\n%safter (%v)\n%s", before, err, after)
		}
	}()
	// A kept container outlives each session's relay: every session reaches its own
	// through the same container (the first runs may recreate it, as settle says).
	var settled []string
	for i := range 4 {
		r := run(t, p.dir, env, "", append(flags, "--keep-container", "--egress=none", "--", "/bin/sh", "-c", `
			ssh-add -l | grep -q HOSTKEY && echo LISTS
			ssh-add -D </dev/null >/dev/null 2>&1 && echo REMOVED_ALL
			true`)...)
		if r.code != 0 || r.stdout != "LISTS\n" || !strings.Contains(r.stderr, way+" ") {
			t.Errorf("kept container, session %d: want the keys listed and none removed, through the %s:\n%s", i, strings.TrimPrefix(way, "agent "), r)
		}
		// What relays the agent in the container ends with the session.
		if ids := projectContainers(t, iso, p, false); len(ids) == 1 {
			if out, err := containerProcesses(iso, ids[0]); err != nil || strings.Contains(string(out), "agent-mux") {
				t.Errorf("kept container, session %d: a process of the session's agent relay outlived it (%v):\n%s", i, err, out)
			}
		}
		switch ids := projectContainers(t, iso, p, false); {
		case i == 1:
			settled = ids
		case i > 1 && !slices.Equal(ids, settled):
			t.Errorf("the kept container changed between sessions: %v then %v", settled, ids)
		}
	}
}

// agentAttacked checks what agentattack (testdata/agentattack.c) reported from inside
// the sandbox: every request the filter refuses is answered SSH_AGENT_FAILURE, an
// over-long frame ends its connection, at most sshagent.MaxConns (64) connections are
// served at once and the agent serves again once they end. Whether the agent's keys
// survived the raw requests and a relay's output written to directly, the caller
// checks on the host.
func agentAttacked(t *testing.T, r result) {
	t.Helper()
	raws, many, after, huge := 0, "", "", ""
	for _, l := range strings.Split(r.stdout, "\n") {
		f := strings.Fields(l)
		switch {
		case len(f) == 3 && f[0] == "RAW":
			raws++
			if f[2] != "5" {
				t.Errorf("a request of type %s reached the agent or was not answered SSH_AGENT_FAILURE (5): %s", f[1], f[2])
			}
		case len(f) == 3 && f[0] == "MANY":
			many = f[1]
		case len(f) == 2 && f[0] == "AFTER":
			after = f[1]
		case len(f) == 2 && f[0] == "HUGE":
			huge = f[1]
		case len(f) == 3 && f[0] == "HIJACK":
			// Root's, in the container: the command cannot write to it. Were it
			// written to, the host's side would still filter what it carries.
			if f[2] != "failed" {
				t.Errorf("the command wrote to the streams of the process carrying the agent in the container (pid %s)", f[1])
			}
		}
	}
	if raws != 11 || huge != "CLOSED" || after != "ok" || many == "" {
		t.Errorf("agentattack: want 11 refused requests, an over-long frame closed, the agent serving after the flood:\n%s", r)
	}
	if n, err := strconv.Atoi(many); err != nil || n < 1 || n > 64 {
		t.Errorf("connections served at once: %q of 200, want 1 to 64:\n%s", many, r)
	}
}

// TestSSHAgentKeptKill9: kill -9 of devsandbox during a session in a kept container
// ends the session's agent carrier in it (the engine ends its stdin when
// devsandbox-docker, which takes the session down, is gone): by default on every
// engine. With docker.agent_bind on the local engine, which binds the session's
// relay instead, the relay stops answering.
func TestSSHAgentKeptKill9(t *testing.T) {
	forEachDocker(t, func(t *testing.T, iso string) {
		t.Run("default", func(t *testing.T) { sshAgentKeptKill9(t, iso, false) })
		if iso == localDocker || iso == rootlessDocker {
			t.Run("agent_bind", func(t *testing.T) { sshAgentKeptKill9(t, iso, true) })
		}
	})
}

func sshAgentKeptKill9(t *testing.T, iso string, agentBind bool) {
	p := newProject(t)
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	sock, _ := hostAgent(ctx, t, p)
	args := []string{"--isolator=" + iso, "--keep-container", "--egress=none"}
	if agentBind {
		args = append(args, "--config="+p.writeConfig(iso, "agentbind.toml", "[docker]\nagent_bind = true\n"))
	}
	cmd := command(ctx, p.dir, baseEnv("SSH_AUTH_SOCK="+sock, "XDG_RUNTIME_DIR="+runtimeDir()), append(args, "--",
		"/bin/sh", "-c", `ssh-add -l >/dev/null; test $? -le 1 && echo ready; sleep 1000`)...)
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	newLineReader(t, stdout).waitFor("ready")
	ids := projectContainers(t, iso, p, false)
	if len(ids) != 1 {
		t.Fatalf("want the kept container, have %v", ids)
	}
	carriers := func() string {
		out, err := containerProcesses(iso, ids[0])
		if err != nil {
			t.Fatalf("the container's processes: %v: %s", err, out)
		}
		var found []string
		for _, l := range strings.Split(string(out), "\n") {
			if strings.Contains(l, "agent-mux") {
				found = append(found, l)
			}
		}
		return strings.Join(found, "\n")
	}
	// With docker.agent_bind the local engine binds the session's relay
	// (TestSSHAgentPath): its socket, in the kept sessions' relays' directory,
	// must stop answering. By default there is no such relay: the carrier.
	relays, _ := filepath.Glob(filepath.Join(runtimeDir(), "devsandbox", strings.TrimPrefix(p.name(), filepath.Base(p.dir)+"-"), "agent", "kept", "*.sock"))
	if agentBind {
		if c := carriers(); c != "" || len(relays) != 1 {
			t.Fatalf("want the session's bound relay and no carrier with docker.agent_bind on the local engine, have relays %v and carriers:\n%s", relays, c)
		}
	} else if c := carriers(); c == "" || len(relays) != 0 {
		t.Fatalf("want the agent carrier in the kept container and no bound relay by default, have relays %v and carriers:\n%s", relays, c)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for _, r := range relays {
		for {
			c, err := net.Dial("unix", r)
			if err != nil {
				break
			}
			c.Close()
			if time.Now().After(deadline) {
				t.Fatalf("the session's agent relay %s still answers 10s after devsandbox was killed", r)
			}
			time.Sleep(100 * time.Millisecond) // polling the relay's socket, bounded above
		}
	}
	for c := carriers(); c != ""; c = carriers() {
		if time.Now().After(deadline) {
			t.Fatalf("the session's agent carrier outlived devsandbox by 10s:\n%s", c)
		}
		time.Sleep(100 * time.Millisecond) // polling the engine, bounded above
	}
}

// containerProcesses lists the processes of the running container id with their
// arguments: `docker top`, or on a rootless engine, which without cgroups has
// none, the container's /proc read by an exec (cmdline is everyone's to read).
func containerProcesses(iso, id string) ([]byte, error) {
	if iso == rootlessDocker {
		return dockerCmd(iso, "exec", id, "/bin/sh", "-c", `for f in /proc/[0-9]*/cmdline; do tr '\0' ' ' <"$f" 2>/dev/null; echo; done`).CombinedOutput()
	}
	return dockerCmd(iso, "top", id, "-eo", "pid,args").CombinedOutput()
}

// hostAgent starts an ssh-agent as the test user, its socket in p, until the test
// ends; asUser runs a program as the test user with SSH_AUTH_SOCK naming it. The
// project's socket directory in runtimeDir, which runs given XDG_RUNTIME_DIR make,
// is removed at the end.
// addHostKey makes an ed25519 key commented HOSTKEY in the project's agent directory,
// adds it to the host agent asUser reaches, and returns its public key.
func addHostKey(t *testing.T, p *project, asUser func(name string, args ...string) *exec.Cmd) string {
	t.Helper()
	p.mkdir("agent")
	key := p.path("agent/hostkey")
	if out, err := asUser("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "HOSTKEY", "-f", key).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen: %v\n%s", err, out)
	}
	if out, err := asUser("ssh-add", key).CombinedOutput(); err != nil {
		t.Fatalf("ssh-add: %v\n%s", err, out)
	}
	pub, err := os.ReadFile(key + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	return string(pub)
}

func hostAgent(ctx context.Context, t *testing.T, p *project) (sock string, asUser func(name string, args ...string) *exec.Cmd) {
	t.Helper()
	p.mkdir("agent")
	return hostAgentAt(ctx, t, p, filepath.Join(p.path("agent"), "agent.sock"))
}

// hostAgentAt is hostAgent with the agent's socket at sock, whose directory exists
// and the test user may write.
func hostAgentAt(ctx context.Context, t *testing.T, p *project, sock string) (string, func(name string, args ...string) *exec.Cmd) {
	t.Helper()
	id := strings.TrimPrefix(p.name(), filepath.Base(p.dir)+"-")
	t.Cleanup(func() { os.RemoveAll(filepath.Join(runtimeDir(), "devsandbox", id)) })
	asUser := func(name string, args ...string) *exec.Cmd {
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Env = baseEnv("SSH_AUTH_SOCK=" + sock)
		cmd.SysProcAttr = &syscall.SysProcAttr{}
		if it.asOther {
			cmd.SysProcAttr.Credential = &syscall.Credential{Uid: uint32(it.uid), Gid: uint32(it.gid), Groups: it.groups}
		}
		return cmd
	}
	agent := asUser("ssh-agent", "-D", "-a", sock)
	if err := agent.Start(); err != nil {
		needOrSkip(t, "ssh-agent (scripts/setup-test-env.sh installs openssh-client): %v", err)
	}
	t.Cleanup(func() { _ = agent.Process.Kill(); _ = agent.Wait() })
	for deadline := time.Now().Add(10 * time.Second); ; {
		if _, err := os.Stat(sock); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("ssh-agent did not make its socket")
		}
		time.Sleep(10 * time.Millisecond) // polling for the agent's socket, bounded above
	}
	return sock, asUser
}
