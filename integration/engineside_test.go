//go:build integration

package integration

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// mountOf is one mount of a container, as docker inspect shows it.
type mountOf struct {
	Type, Source, Destination, Name string
	RW                              bool
}

// containerMounts returns the mounts of container id in docker variant iso's engine.
func containerMounts(t *testing.T, iso, id string) []mountOf {
	t.Helper()
	var ms []mountOf
	if err := json.Unmarshal([]byte(dockerAt(t, iso, "inspect", "--format", "{{json .Mounts}}", id)), &ms); err != nil {
		t.Fatal(err)
	}
	return ms
}

// within reports whether path is dir or below it.
func within(path, dir string) bool { return path == dir || strings.HasPrefix(path, dir+"/") }

// devsandboxOwn says why bind m of p's run is one of devsandbox's own host paths, not
// the project, the sandbox home or a binding the user or a tool declared: a socket,
// the install directory, anything in /tmp or /run, anything in devsandbox's state
// directory (generated files, the mask source: an engine elsewhere cannot see them).
func devsandboxOwn(p *project, m mountOf) string {
	if m.Type != "bind" {
		return ""
	}
	state := filepath.Join(it.home, ".local/state/devsandbox")
	var st syscall.Stat_t
	switch {
	case syscall.Stat(m.Source, &st) == nil && st.Mode&syscall.S_IFMT == syscall.S_IFSOCK:
		return "a socket"
	case within(m.Source, filepath.Dir(it.bin)):
		return "the install directory"
	case within(m.Source, "/tmp") || within(m.Source, "/run"):
		return "this machine's /tmp or /run"
	case within(m.Source, state):
		return "devsandbox's state directory"
	}
	return ""
}

// Guarantee 11 (attack): a docker sandbox binds nothing from the host's file system
// but the project and the sandbox home, in every egress mode, with published ports
// and masks, one-shot and kept: not the init from the install directory, not the
// proxy's socket, not the socket or publish directory, not a generated file (passwd,
// group, the CA bundle, a tool's file below the home such as the ssh config) or the
// mask source from the state directory. Its session's
// companion binds nothing of the host's.
func TestDockerBindsOnlyTheProject(t *testing.T) {
	forEachDocker(t, func(t *testing.T, iso string) {
		for _, tc := range []struct {
			name  string
			flags []string
		}{
			{"open", []string{"--egress=open"}},
			{"proxy", []string{"--egress=proxy", "--publish", "0"}},
			{"allowlist", []string{"--egress=allowlist", "--allow", "192.0.2.1", "--publish", "0"}},
			{"none", []string{"--egress=none"}},
			{"kept proxy", []string{"--keep-container", "--egress=proxy", "--publish", "0"}},
			{"kept allowlist", []string{"--keep-container", "--egress=allowlist", "--allow", "192.0.2.1", "--publish", "0"}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				p := newProject(t)
				p.write("proj/.env", "TOKEN=masked\n") // masked by default (sandbox.mask_files)
				flags := tc.flags
				if flags[len(flags)-1] == "0" {
					flags = append(flags[:len(flags)-1:len(flags)-1], fmt.Sprintf("%d:8000", freePort(t)))
				}
				cmd := command(t.Context(), p.dir, baseEnv(), append(append([]string{"--isolator=" + iso}, flags...), "--", "/bin/sh", "-c", "echo ready; read _")...)
				_, stop := startReady(t, cmd)
				defer stop()
				ids := append(projectContainers(t, iso, p, false), roleContainers(t, iso, p, false, "companion")...)
				if len(ids) == 0 {
					t.Fatal("no container")
				}
				for _, id := range ids {
					for _, m := range containerMounts(t, iso, id) {
						if why := devsandboxOwn(p, m); why != "" {
							t.Errorf("container %.12s binds the host's %s at %s: %s", id, m.Source, m.Destination, why)
						}
					}
				}
			})
		}
	})
}

// A project the engine cannot see (the stand-in cannot see this machine's /tmp, as
// Docker Desktop cannot see a directory not shared with it) fails with 125 naming the
// engine, the path and the fix, before anything starts: no container, no directory
// made in its place, the command never ran. The local engine runs it.
func TestDockerEngineCannotSeeProject(t *testing.T) {
	forEachDocker(t, func(t *testing.T, iso string) {
		root, err := os.MkdirTemp("", "dsb-unseen-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(root) })
		dir := filepath.Join(root, "proj")
		for _, d := range []string{root, dir, dir + "/.git"} {
			if err := os.MkdirAll(d, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Chown(d, it.uid, it.gid); err != nil {
				t.Fatal(err)
			}
		}
		p := &project{t: t, root: root, dir: dir}
		t.Cleanup(func() { p.forget(dir) })
		r := run(t, dir, nil, "", "--isolator="+iso, "--egress=none", "--", "/bin/sh", "-c", "touch ran")
		if iso == localDocker {
			if r.code != 0 {
				t.Fatalf("the local engine sees /tmp:\n%s", r)
			}
			return
		}
		if r.code != 125 || !strings.Contains(r.stderr, remoteEngine) || !strings.Contains(r.stderr, dir) ||
			!strings.Contains(r.stderr, "the project") || !strings.Contains(r.stderr, "share the directory") {
			t.Fatalf("a project the engine cannot see:\n%s", r)
		}
		if _, err := os.Stat(filepath.Join(dir, "ran")); !os.IsNotExist(err) {
			t.Errorf("the command ran: %v", err)
		}
		if ids := projectContainers(t, iso, p, true); len(ids) != 0 {
			t.Errorf("containers left: %v", ids)
		}
		if out, err := dockerCmd(iso, "run", "--rm", "-v", "/tmp:/t:ro", "devsandbox-test/busybox:1", "ls", "-a", "/t").CombinedOutput(); err != nil || strings.Contains(string(out), filepath.Base(root)) {
			t.Errorf("the engine made %s on its side (%v): %s", root, err, out)
		}
	})
}

// The audit records of a session whose devsandbox was killed (kill -9) are in the
// project's log: the records stream back as they come, and devsandbox-docker relays
// the companion's last ones while it takes the session down. With a kept container, the
// session's process in the kept companion ends and the companion stays.
func TestDockerAuditSurvivesKill9(t *testing.T) {
	requireRoot(t)
	o := newOutside(t)
	forEachDocker(t, func(t *testing.T, iso string) {
		for _, keep := range []bool{false, true} {
			t.Run(fmt.Sprintf("keep=%v", keep), func(t *testing.T) {
				p := newProject(t)
				args := []string{"--isolator=" + iso, "--egress=proxy", "--allow", o.addr + ":8080"}
				if keep {
					args = append(args, "--keep-container")
				}
				cmd := command(t.Context(), p.dir, baseEnv(), append(args, "--", "/bin/sh", "-c",
					fmt.Sprintf(`curl -s -o /dev/null -m 10 http://%s:8080/before-kill; echo ready; sleep 1000`, o.addr))...)
				stdout, _ := cmd.StdoutPipe()
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				newLineReader(t, stdout).waitFor("ready")
				if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
					t.Fatal(err)
				}
				_ = cmd.Wait()
				// devsandbox-docker ends the session (bounded) after devsandbox is gone.
				deadline := time.Now().Add(15 * time.Second)
				for sessionCompanions(t, iso, p) > 0 {
					if time.Now().After(deadline) {
						t.Fatal("the session's companion outlived devsandbox by 15s")
					}
					runtimeYield()
				}
				if keep {
					if c := roleContainers(t, iso, p, false, "companion"); len(c) != 1 {
						t.Errorf("want the kept companion running, have %v", c)
					}
				}
				for {
					r := run(t, p.dir, nil, "", "logs", "proxy", "--json")
					if strings.Contains(r.stdout, `"path":"/before-kill"`) {
						return
					}
					if time.Now().After(deadline) {
						t.Fatalf("the request made before kill -9 is not in the audit log:\n%s", r)
					}
					runtimeYield()
				}
			})
		}
	})
}

// sessionCompanions counts p's session companions: companion containers of a session,
// and sessions' processes in a kept companion (each a `devsandbox-proxy companion`
// beside its main process, `devsandbox-proxy companion hold`).
func sessionCompanions(t *testing.T, iso string, p *project) int {
	t.Helper()
	id := strings.TrimPrefix(p.name(), filepath.Base(p.dir)+"-")
	n := 0
	for line := range strings.Lines(dockerAt(t, iso, "ps", "-a", "--no-trunc", "--filter", "label=dev.devsandbox.project="+id,
		"--filter", "label=dev.devsandbox.role=companion", "--format", `{{.ID}} {{.Label "dev.devsandbox.kept"}}`)) {
		c, kept, _ := strings.Cut(strings.TrimSpace(line), " ")
		if kept != "true" {
			n++
			continue
		}
		// The container may be gone meanwhile: then it runs nothing.
		out, _ := dockerCmd(iso, "top", c, "-o", "pid,args").Output()
		for l := range strings.Lines(string(out)) {
			if _, args, _ := strings.Cut(strings.TrimSpace(l), " "); strings.TrimSpace(args) == "/devsandbox-proxy companion" {
				n++
			}
		}
	}
	return n
}

// A tool's generated file below the home (the ssh tool's config overlay) comes from a
// volume of the engine's: the sandbox user's, 0444, not writable from the sandbox
// (bound read-only). A run whose engine lost its volumes (a volume prune) makes them
// anew. (The project's git metadata comes as content too: more than one volume.)
func TestDockerContentVolume(t *testing.T) {
	forEachDocker(t, func(t *testing.T, iso string) {
		p := newProject(t)
		script := `stat -c '%u %a' ~/.ssh/config; test -s ~/.ssh/config && echo content; (echo x >> ~/.ssh/config) 2>/dev/null && echo WROTE; (chmod 666 ~/.ssh/config) 2>/dev/null && echo CHMODDED; true`
		want := fmt.Sprintf("%d 444\ncontent\n", it.uid)
		id := strings.TrimPrefix(p.name(), filepath.Base(p.dir)+"-")
		volumes := func() []string {
			return strings.Fields(dockerAt(t, iso, "volume", "ls", "-q", "--filter", "label=dev.devsandbox.project="+id, "--filter", "label=dev.devsandbox.role=content"))
		}
		if out := p.mustSandbox(iso, []string{"--egress=none"}, script); out != want {
			t.Fatalf("the ssh config: %q, want %q", out, want)
		}
		vs := volumes()
		if len(vs) == 0 {
			t.Fatal("no content volume")
		}
		dockerAt(t, iso, append([]string{"volume", "rm"}, vs...)...)
		if out := p.mustSandbox(iso, []string{"--egress=none"}, script); out != want {
			t.Fatalf("after the volume's removal, the ssh config: %q, want %q", out, want)
		}
		again := volumes()
		slices.Sort(again)
		slices.Sort(vs)
		if !slices.Equal(again, vs) {
			t.Fatalf("want %v made anew, have %v", vs, again)
		}
	})
}

// A kept allowlist container's /etc/hosts (the names resolved at launch) is a file of
// a volume of the engine's, root's, read-only in the sandbox, which each session's
// firewall helper rewrites in place when the session's rules or names differ: here
// the file is emptied behind devsandbox's back and the record of the applied rules
// removed, and the next session of the same container sees it written again.
func TestDockerKeptHosts(t *testing.T) {
	forEachDocker(t, func(t *testing.T, iso string) {
		p := newProject(t)
		flags := []string{"--keep-container", "--egress=allowlist", "--allow", "192.0.2.1"}
		script := `stat -c '%u %a' /etc/hosts; grep -c 'resolved by devsandbox' /etc/hosts; (echo x >> /etc/hosts) 2>/dev/null && echo WROTE; true`
		want := "0 644\n1\n"
		if out := p.mustSandbox(iso, flags, script); out != want {
			t.Fatalf("/etc/hosts: %q, want %q", out, want)
		}
		id := strings.TrimPrefix(p.name(), filepath.Base(p.dir)+"-")
		vs := strings.Fields(dockerAt(t, iso, "volume", "ls", "-q", "--filter", "label=dev.devsandbox.project="+id, "--filter", "label=dev.devsandbox.role=volatile"))
		if len(vs) != 1 {
			t.Fatalf("want one volatile volume, have %v", vs)
		}
		kept := projectContainers(t, iso, p, true)
		dockerAt(t, iso, "run", "--rm", "--network", "none", "-v", vs[0]+":/v", "devsandbox-test/busybox:1", "sh", "-c", ": > /v/content")
		if err := os.Remove(filepath.Join(it.home, ".local/state/devsandbox", p.name(), "docker-firewall")); err != nil {
			t.Fatal(err)
		}
		if out := p.mustSandbox(iso, flags, script); out != want {
			t.Fatalf("/etc/hosts after the rules were applied again: %q, want %q", out, want)
		}
		if again := projectContainers(t, iso, p, true); strings.Join(again, " ") != strings.Join(kept, " ") {
			t.Fatalf("the kept container changed: %v, then %v", kept, again)
		}
	})
}
