//go:build integration

package integration

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSSHAgentPath: which way the ssh agent reaches a docker container, and that
// neither way can be turned against the host. By default the Engine API stream, on
// every engine, the local one included (DESIGN guarantee 11: nothing of the host's is
// bound for the agent; --debug says "agent stream", and no verdict about the
// engine's binds is read or written). With docker.agent_bind (the user's opt-in) the
// local engine binds the session relay's socket read-only, proved by the init before
// the command starts ("agent bound"); the stand-in cannot see /run/user/..., refuses
// that bind, and gets the stream. A kept container whose relays' directory was
// removed (housekeeping makes a new one) falls back to the stream in its next
// session; a default session recreates it without the bind, and takes the stream. Through the bound path the sandbox can neither plant anything in the
// host's directory of relays (write, link, fifo, directory), nor replace the socket,
// nor get past the filter.
func TestSSHAgentPath(t *testing.T) {
	forEachDocker(t, sshAgentPath)
}

// agentPathScript is what each session runs: the agent works, and every attempt on
// the socket's path and its directory says whether it succeeded.
const agentPathScript = `
	d=$(dirname "$SSH_AUTH_SOCK")
	ssh-add -l | grep -q HOSTKEY && echo LISTS
	ssh-add -D </dev/null >/dev/null 2>&1 && echo REMOVED_ALL
	ssh-add -d "$PWD/hostkey.pub" </dev/null >/dev/null 2>&1 && echo REMOVED_ONE
	rm -f "$SSH_AUTH_SOCK" 2>/dev/null && test ! -S "$SSH_AUTH_SOCK" && echo REPLACED
	mv "$SSH_AUTH_SOCK" /tmp/moved 2>/dev/null && echo REPLACED
	touch "$d/planted" 2>/dev/null && echo PLANTED
	ln -s / "$d/planted-link" 2>/dev/null && echo PLANTED
	ln "$SSH_AUTH_SOCK" "$d/planted-hard" 2>/dev/null && echo PLANTED
	mkfifo "$d/planted-fifo" 2>/dev/null && echo PLANTED
	mkdir "$d/planted-dir" 2>/dev/null && echo PLANTED
	ssh-add -l | grep -q HOSTKEY && echo STILL_LISTS
	true`

func sshAgentPath(t *testing.T, iso string) {
	p := newProject(t)
	ctx, cancel := context.WithTimeout(t.Context(), 120*time.Second)
	defer cancel()
	sock, asUser := hostAgent(ctx, t, p)
	p.write("proj/hostkey.pub", addHostKey(t, p, asUser))
	p.chownUp(p.path("proj/hostkey.pub"))
	before, err := asUser("ssh-add", "-L").Output()
	if err != nil {
		t.Fatalf("ssh-add -L: %v", err)
	}
	sockDir := filepath.Join(runtimeDir(), "devsandbox", strings.TrimPrefix(p.name(), filepath.Base(p.dir)+"-"))
	env := []string{"SSH_AUTH_SOCK=" + sock, "XDG_RUNTIME_DIR=" + runtimeDir()}
	want := "agent bound" // the local engines: docker, docker-rootless
	if iso != localDocker && iso != rootlessDocker {
		want = "agent stream" // the stand-in cannot see /run/user/...
	}
	verdict := filepath.Join(it.home, ".local/state/devsandbox", p.name(), "docker", "agent-unseen")
	optIn := "--config=" + p.writeConfig(iso, "agentbind.toml", "[docker]\nagent_bind = true\n")
	session := func(what, want string, flags ...string) {
		t.Helper()
		args := append([]string{"--isolator=" + iso, "--debug", "--egress=none"}, flags...)
		r := run(t, p.dir, env, "", append(args, "--", "/bin/sh", "-c", agentPathScript)...)
		if r.code != 0 || r.stdout != "LISTS\nSTILL_LISTS\n" {
			t.Errorf("%s: want the keys listed, none removed, the socket neither replaced nor anything planted beside it:\n%s", what, r)
		}
		other := map[string]string{"agent bound": "agent stream", "agent stream": "agent bound"}[want]
		if !strings.Contains(r.stderr, want+" ") || strings.Contains(r.stderr, other+" ") {
			t.Errorf("%s: the agent did not take the expected path (%q, and not %q, in the --debug timings):\n%s", what, want, other, r)
		}
		// The host's directory of relays holds only relays' sockets (and the kept
		// sessions' directory), nothing the sandbox made.
		_ = filepath.WalkDir(filepath.Join(sockDir, "agent"), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			if strings.Contains(d.Name(), "planted") || (d.Type() != fs.ModeSocket && !d.IsDir()) {
				t.Errorf("%s: the sandbox left %s (%v) in the host's directory of agent relays", what, path, d.Type())
			}
			return nil
		})
		if after, err := asUser("ssh-add", "-L").Output(); err != nil || string(after) != string(before) {
			t.Errorf("%s: the host agent's keys changed: before\n%safter (%v)\n%s", what, before, err, after)
		}
	}
	// The default: the stream on every engine, and the engine is never asked to
	// bind (the stand-in, which refuses such a bind, leaves no verdict behind).
	session("default, one-shot", "agent stream")
	if _, err := os.Lstat(verdict); err == nil {
		t.Errorf("a run without docker.agent_bind wrote the engine's verdict on the agent's bind, %s", verdict)
	}
	// docker.agent_bind: the local engine binds, the stand-in takes the stream.
	session("agent_bind, one-shot", want, optIn)
	session("agent_bind, kept, first session", want, optIn, "--keep-container")
	session("agent_bind, kept, second session", want, optIn, "--keep-container")
	// The kept container binds the relays' directory it was made with: one made
	// anew (after housekeeping removed the socket directory) is not the one it
	// sees, so the proof fails and the session takes the stream.
	if err := os.RemoveAll(sockDir); err != nil {
		t.Fatal(err)
	}
	session("agent_bind, kept, after the socket directory was made anew", "agent stream", optIn, "--keep-container")
	// A default session does not use a kept container that binds a relays'
	// directory: it is recreated without (TestAgentBindOffRecreates), the stream.
	session("default, kept container made with agent_bind", "agent stream", "--keep-container")
}

// TestAgentBindOffRecreates: turning docker.agent_bind off holds at the next run of a
// kept container made with it. On the local engine, the container made with the key
// binds the kept sessions' relays' directory; the next run without the key recreates
// it (saying so), and the new container has no mount of that directory (the Engine
// API's inspect, through the docker CLI); the sandbox home survives the recreation.
// While a session made with the key is attached, the run with the key off is
// refused (125) and says why.
// Turning the key on again reuses the container without the bind (the stream, no
// recreation). On the stand-in, which refuses the bind, nothing is ever recreated.
func TestAgentBindOffRecreates(t *testing.T) {
	forEachDocker(t, agentBindOff)
}

func agentBindOff(t *testing.T, iso string) {
	local := iso == localDocker || iso == rootlessDocker // the engines that see this host's sockets
	p := newProject(t)
	ctx, cancel := context.WithTimeout(t.Context(), 120*time.Second)
	defer cancel()
	sock, _ := hostAgent(ctx, t, p)
	env := []string{"SSH_AUTH_SOCK=" + sock, "XDG_RUNTIME_DIR=" + runtimeDir()}
	sockDir := filepath.Join(runtimeDir(), "devsandbox", strings.TrimPrefix(p.name(), filepath.Base(p.dir)+"-"))
	optIn := "--config=" + p.writeConfig(iso, "agentbind.toml", "[docker]\nagent_bind = true\n")
	const recreated = "recreating it"
	session := func(what, script string, flags ...string) result {
		t.Helper()
		args := append([]string{"--isolator=" + iso, "--debug", "--egress=none", "--keep-container"}, flags...)
		r := run(t, p.dir, env, "", append(args, "--", "/bin/sh", "-c", script)...)
		if r.code != 0 {
			t.Fatalf("%s:\n%s", what, r)
		}
		return r
	}
	// The kept container's mounts of the socket directory (the relays' directory is
	// in it), or at the in-container path of the bind, as the engine reports them.
	relayMounts := func() []string {
		t.Helper()
		ids := projectContainers(t, iso, p, false)
		if len(ids) != 1 {
			t.Fatalf("want one running kept container, have %v", ids)
		}
		var found []string
		for line := range strings.Lines(dockerAt(t, iso, "inspect", "--type", "container", "--format", "{{range .Mounts}}{{.Source}} {{.Destination}}\n{{end}}", ids[0])) {
			src, dst, _ := strings.Cut(strings.TrimSpace(line), " ")
			if strings.HasPrefix(src, sockDir) || strings.HasPrefix(dst, "/run/devsandbox/agent-host") {
				found = append(found, line)
			}
		}
		return found
	}
	r := session("agent_bind on", `echo kept > "$HOME/keepme"`, optIn)
	if m := relayMounts(); (len(m) == 1) != (local) {
		t.Fatalf("the kept container made with docker.agent_bind on %s: mounts of the relays' directory %q", iso, m)
	}
	// While a session made with the key is attached, a run with the key off is
	// refused (125), naming the key, rather than run in the container that binds
	// the relays (the stand-in's has no bind: it runs).
	attached := command(t.Context(), p.dir, baseEnv(env...), "--isolator="+iso, "--egress=none", "--keep-container", optIn, "--", "/bin/sh", "-c", "echo ready; read _ || true")
	stdin, err := attached.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	startLines(t, attached).waitFor("ready")
	r = run(t, p.dir, env, "", "--isolator="+iso, "--egress=none", "--keep-container", "--", "true")
	if local && (r.code != 125 || !strings.Contains(r.stderr, "another session is attached") || !strings.Contains(r.stderr, "docker.agent_bind")) {
		t.Errorf("docker.agent_bind off with a session attached to the kept container that binds the relays: want 125 naming the key:\n%s", r)
	}
	if !local && r.code != 0 {
		t.Errorf("docker.agent_bind off with a session attached to a kept container without the bind:\n%s", r)
	}
	stdin.Close()
	if err := attached.Wait(); err != nil {
		t.Fatalf("the attached session: %v", err)
	}
	r = session("agent_bind off", `cat "$HOME/keepme"`)
	if local && (!strings.Contains(r.stderr, recreated) || !strings.Contains(r.stderr, "agent_bind")) {
		t.Errorf("turning docker.agent_bind off did not recreate the kept container that binds the relays, or did not say why:\n%s", r)
	}
	if !local && strings.Contains(r.stderr, recreated) {
		t.Errorf("a kept container without the bind was recreated when docker.agent_bind went off:\n%s", r)
	}
	if r.stdout != "kept\n" {
		t.Errorf("the sandbox home did not survive the recreation: %q\n%s", r.stdout, r)
	}
	if m := relayMounts(); len(m) != 0 {
		t.Errorf("with docker.agent_bind off, the kept container still mounts the host's agent relays: %q", m)
	}
	// On again: the container without the bind serves it (the stream), not recreated,
	// and the run says the key is not in effect and how to put it in effect.
	r = session("agent_bind on again", `true`, optIn)
	if strings.Contains(r.stderr, recreated) || !strings.Contains(r.stderr, "agent stream ") {
		t.Errorf("turning docker.agent_bind on recreated the kept container, or did not take the stream:\n%s", r)
	}
	const notApplied = "docker.agent_bind is on, but the kept container"
	if local && (!strings.Contains(r.stderr, notApplied) || !strings.Contains(r.stderr, "docker rm -f")) {
		t.Errorf("docker.agent_bind on, the kept container without the bind: the run did not say the key is not applied, and how to apply it:\n%s", r)
	}
	if !local && strings.Contains(r.stderr, notApplied) {
		t.Errorf("docker.agent_bind on, on an engine that cannot bind the agent: the run said the key is not applied:\n%s", r)
	}
}
