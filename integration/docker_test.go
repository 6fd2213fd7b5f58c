//go:build integration

package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// setupDocker sets up the docker variants the run names (see engine_test.go): the
// local one always, for the docker-only tests.
func setupDocker() {
	for _, iso := range []string{localDocker, remoteDocker} {
		if iso == localDocker || slices.Contains(isolators(), iso) {
			engineReady[iso] = setupEngine(iso)
		}
	}
	engineReady[tcpDocker] = "docker-remote is not among DEVSANDBOX_IT_ISOLATORS"
	if slices.Contains(isolators(), remoteDocker) {
		engineReady[tcpDocker] = setupTCPEngine()
	}
	engineReady[rootlessDocker] = "neither docker nor docker-rootless is among DEVSANDBOX_IT_ISOLATORS"
	if slices.Contains(isolators(), localDocker) || slices.Contains(isolators(), rootlessDocker) {
		engineReady[rootlessDocker] = setupRootlessEngine()
	}
}

// requireDocker skips without this machine's docker engine and its test image, and
// fails in CI.
func requireDocker(t *testing.T) {
	t.Helper()
	requireEngine(t, localDocker)
}

// projectContainers lists the ids of the project's sandbox containers (running or
// not) in docker variant iso's engine; roleContainers those of a role (the session's
// companion, the firewall helper).
func projectContainers(t *testing.T, iso string, p *project, all bool) []string {
	t.Helper()
	return roleContainers(t, iso, p, all, "")
}

func roleContainers(t *testing.T, iso string, p *project, all bool, role string) []string {
	t.Helper()
	id := strings.TrimPrefix(p.name(), filepath.Base(p.dir)+"-")
	args := []string{"ps", "--no-trunc", "--filter", "label=dev.devsandbox.project=" + id, "--format", `{{.ID}} {{.Label "dev.devsandbox.role"}}`}
	if all {
		args = append(args, "-a")
	}
	var ids []string
	for line := range strings.Lines(dockerAt(t, iso, args...)) {
		if cid, r, _ := strings.Cut(strings.TrimSpace(line), " "); cid != "" && r == role {
			ids = append(ids, cid)
		}
	}
	return ids
}

// projectVolumes lists the names of the project's volumes in docker variant iso's
// engine.
func projectVolumes(t *testing.T, iso string, p *project) []string {
	t.Helper()
	id := strings.TrimPrefix(p.name(), filepath.Base(p.dir)+"-")
	return strings.Fields(dockerAt(t, iso, "volume", "ls", "-q", "--filter", "label=dev.devsandbox.project="+id))
}

// sessionVolumes are the project's volumes in docker variant iso's engine that belong
// to a session: all but its content and volatile volumes, which hold generated files
// for every run of the project (like its home volume) and go with `sandboxes rm` or,
// once unused, `sandboxes prune`.
func sessionVolumes(t *testing.T, iso string, p *project) []string {
	t.Helper()
	id := strings.TrimPrefix(p.name(), filepath.Base(p.dir)+"-")
	keep := map[string]bool{}
	// The project's own volumes that outlive a session: content, volatile and the
	// anchors' top-directory volumes (a concurrent session may be about to mount one).
	for _, role := range []string{"content", "volatile", "anchor"} {
		for _, v := range strings.Fields(dockerAt(t, iso, "volume", "ls", "-q", "--filter", "label=dev.devsandbox.project="+id, "--filter", "label=dev.devsandbox.role="+role)) {
			keep[v] = true
		}
	}
	var out []string
	for _, v := range projectVolumes(t, iso, p) {
		if !keep[v] {
			out = append(out, v)
		}
	}
	return out
}

// containerPids returns the host pids of the processes in container id of docker
// variant iso's engine: those in its pid namespace (exec'd processes are not
// descendants of its pid 1). Both engines share this machine's kernel.
func containerPids(t *testing.T, iso, id string) []int {
	t.Helper()
	pid, err := strconv.Atoi(dockerAt(t, iso, "inspect", "--format", "{{.State.Pid}}", id))
	if err != nil || pid == 0 {
		return nil
	}
	return pidNamespaceMembers(pid)
}

// settle runs the project twice: the first run creates mount points in the sandbox
// home (~/.ssh for the ssh tool's config), which makes the next Plan mask ~/.ssh, a
// changed configuration that recreates a kept container once.
func settle(p *project, iso string, flags []string) {
	p.t.Helper()
	p.mustSandbox(iso, flags, `true`)
	p.mustSandbox(iso, flags, `true`)
}

// keep_container: a later run with the same configuration execs into the same
// container (a file in its /tmp survives); a changed configuration recreates it;
// with a session attached, a changed configuration is refused, saying why.
func TestDockerKeepContainer(t *testing.T) {
	forEachDocker(t, func(t *testing.T, iso string) {
		p := newProject(t)
		keep := []string{"--keep-container", "--egress=none"}
		settle(p, iso, keep)
		p.mustSandbox(iso, keep, `echo first > /tmp/marker`)
		ids := projectContainers(t, iso, p, false)
		if len(ids) != 1 {
			t.Fatalf("want one running kept container, have %v", ids)
		}
		// The session's init starts with the GOMAXPROCS=1 devsandbox added for it
		// alone (wire.UnsetGOMAXPROCSArg): the command gets none, or the one the
		// run sets.
		if out := p.mustSandbox(iso, keep, `cat /tmp/marker; echo "procs=${GOMAXPROCS-unset}"`); out != "first\nprocs=unset\n" {
			t.Fatalf("second run did not reuse the container, or its command got the init's GOMAXPROCS: %q", out)
		}
		if again := projectContainers(t, iso, p, false); len(again) != 1 || again[0] != ids[0] {
			t.Fatalf("container changed between runs with one configuration: %v then %v", ids, again)
		}
		labels := dockerAt(t, iso, "inspect", "--format", `{{index .Config.Labels "dev.devsandbox.spec"}} {{index .Config.Labels "dev.devsandbox.version"}}`, ids[0])
		if f := strings.Fields(labels); len(f) != 2 || len(f[0]) != 16 {
			t.Fatalf("kept container labels: %q", labels)
		}
		if out := p.mustSandbox(iso, append(keep, "-e", "GOMAXPROCS=3"), `echo "procs=${GOMAXPROCS-unset}"`); out != "procs=3\n" {
			t.Fatalf("the command's own GOMAXPROCS=3: %q", out)
		}

		// A session holds the container; a run with another configuration is refused.
		cmd := command(t.Context(), p.dir, baseEnv(), append([]string{"--isolator=" + iso}, append(keep, "--", "/bin/sh", "-c", "echo ready; read _ || true")...)...)
		stdin, _ := cmd.StdinPipe()
		stdout, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		newLineReader(t, stdout).waitFor("ready")
		r := p.sandbox(iso, append(keep, "--read-only"), `true`)
		if r.code != 125 || !strings.Contains(r.stderr, "another session is attached") {
			t.Errorf("changed configuration with a session attached:\n%s", r)
		}
		stdin.Close()
		if err := cmd.Wait(); err != nil {
			t.Fatalf("attached session: %v", err)
		}

		out := p.mustSandbox(iso, append(keep, "--read-only"), `cat /tmp/marker 2>/dev/null || echo fresh`)
		if out != "fresh\n" {
			t.Fatalf("changed configuration did not recreate the container: %q", out)
		}
		if now := projectContainers(t, iso, p, true); len(now) != 1 || now[0] == ids[0] {
			t.Fatalf("after recreation: %v (was %v)", now, ids)
		}
	})
}

// keep_container: processes exec'd into the kept container die with their client,
// including on kill -9 of devsandbox; the container stays for the next run.
func TestDockerExecDiesWithClient(t *testing.T) {
	forEachDocker(t, func(t *testing.T, iso string) {
		p := newProject(t)
		keep := []string{"--keep-container", "--egress=none"}
		settle(p, iso, keep)
		ids := projectContainers(t, iso, p, false)
		if len(ids) != 1 {
			t.Fatalf("want one kept container, have %v", ids)
		}
		before := len(containerPids(t, iso, ids[0]))
		cmd := command(t.Context(), p.dir, baseEnv(), append([]string{"--isolator=" + iso}, append(keep, "--", "/bin/sh", "-c", `sleep 1000 & setsid sleep 1001 & echo ready; wait`)...)...)
		stdout, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		newLineReader(t, stdout).waitFor("ready")
		if n := len(containerPids(t, iso, ids[0])); n < before+3 {
			t.Fatalf("the session's processes are not in the container: %d pids, %d before", n, before)
		}
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_ = cmd.Wait()
		deadline := time.Now().Add(10 * time.Second)
		for {
			n := len(containerPids(t, iso, ids[0]))
			if n == before {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("exec'd processes outlived devsandbox by 10s: %d pids in the container, %d before:\n%s", n, before, dockerAt(t, iso, "top", ids[0]))
			}
			time.Sleep(100 * time.Millisecond)
		}
		if out := p.mustSandbox(iso, keep, `echo still-here`); out != "still-here\n" {
			t.Fatalf("kept container unusable after the kill: %q", out)
		}
	})
}

// kill -9 of devsandbox leaves no container behind (one-shot runs).
func TestDockerKill9LeavesNoContainer(t *testing.T) {
	forEachDocker(t, func(t *testing.T, iso string) {
		p := newProject(t)
		cmd := command(t.Context(), p.dir, baseEnv(), "--isolator="+iso, "--egress=none", "--", "/bin/sh", "-c", `sleep 1000 & echo ready; wait`)
		stdout, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		newLineReader(t, stdout).waitFor("ready")
		// All containers, not only running ones: the engine starts the container's
		// process before it records the container as running, so a command's first
		// output can arrive while `docker ps` still leaves it out (seen once as "want the
		// run's container, have []").
		if ids := projectContainers(t, iso, p, true); len(ids) != 1 {
			t.Fatalf("want the run's container, have %v", ids)
		}
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_ = cmd.Wait()
		deadline := time.Now().Add(10 * time.Second)
		for len(projectContainers(t, iso, p, true)) > 0 {
			if time.Now().After(deadline) {
				t.Fatalf("a container outlived devsandbox by 10s: %v", projectContainers(t, iso, p, true))
			}
			time.Sleep(100 * time.Millisecond)
		}
	})
}

// A stopped one-shot container of the project (as a killed run or an engine restart
// can leave) is removed by the next run.
func TestDockerLeftoverRemoved(t *testing.T) {
	forEachDocker(t, func(t *testing.T, iso string) {
		p := newProject(t)
		id := strings.TrimPrefix(p.name(), filepath.Base(p.dir)+"-")
		left := dockerAt(t, iso, "run", "-d", "--label", "dev.devsandbox.project="+id, "--label", "dev.devsandbox.name="+p.name(), "--label", "dev.devsandbox.kept=false", "--label", "dev.devsandbox.uid="+strconv.Itoa(it.uid), "devsandbox-test/busybox:1", "true")
		// Stopped before the run: the run's one sweep leaves a running container
		// alone (it may be a live run's), and none comes after it.
		dockerAt(t, iso, "wait", left)
		p.mustSandbox(iso, []string{"--egress=none"}, `true`)
		deadline := time.Now().Add(10 * time.Second)
		for slices.Contains(projectContainers(t, iso, p, true), left) {
			if time.Now().After(deadline) {
				t.Fatalf("leftover container %s still there", left)
			}
			time.Sleep(100 * time.Millisecond)
		}
	})
}

// A stopped one-shot container of the project is removed by a warm run in its kept
// container too, once a sweep is due: the project's last sweep (the time of
// docker-sweep in its state directory) is ten minutes old. A warm run right after a
// sweep leaves it for later (the sweep's listings stay off the warm launch).
func TestDockerKeptSweepsWhenDue(t *testing.T) {
	forEachDocker(t, func(t *testing.T, iso string) {
		p := newProject(t)
		keep := []string{"--keep-container", "--egress=none"}
		settle(p, iso, keep)
		stamp := filepath.Join(it.home, ".local/state/devsandbox", p.name(), "docker-sweep")
		if _, err := os.Stat(stamp); err != nil {
			t.Fatalf("the kept container's first run recorded no sweep: %v", err)
		}
		id := strings.TrimPrefix(p.name(), filepath.Base(p.dir)+"-")
		left := dockerAt(t, iso, "run", "-d", "--label", "dev.devsandbox.project="+id, "--label", "dev.devsandbox.name="+p.name(), "--label", "dev.devsandbox.kept=false", "--label", "dev.devsandbox.uid="+strconv.Itoa(it.uid), "devsandbox-test/busybox:1", "true")
		dockerAt(t, iso, "wait", left)
		p.mustSandbox(iso, keep, `true`)
		if !slices.Contains(projectContainers(t, iso, p, true), left) {
			t.Fatalf("a warm run right after a sweep swept (leftover %s gone)", left)
		}
		old := time.Now().Add(-11 * time.Minute)
		if err := os.Chtimes(stamp, old, old); err != nil {
			t.Fatal(err)
		}
		p.mustSandbox(iso, keep, `true`)
		// The run waits for its sweep.
		if slices.Contains(projectContainers(t, iso, p, true), left) {
			t.Fatalf("leftover container %s still there after a warm run with a sweep due", left)
		}
		if fi, err := os.Stat(stamp); err != nil || time.Since(fi.ModTime()) > time.Minute {
			t.Errorf("the warm run's sweep is not recorded: %v", err)
		}
	})
}

// --dry-run prints a docker run line that runs as is (plain mode of the init) when
// the names it shows are set; the protections hold there too.
func TestDockerDryRunIsRunnable(t *testing.T) {
	requireDocker(t)
	p := newProject(t)
	p.write("proj/.env", "TOKEN=bait\n")
	const value = "dry-run-secret-77"
	r := run(t, p.dir, []string{"API_TOKEN=" + value}, "", "--isolator=docker", "--egress=none", "--dry-run", "-e", "API_TOKEN",
		"--", "/bin/sh", "-c", `echo "[$API_TOKEN]"; cat .env; id -u`)
	if r.code != 0 || strings.Contains(r.stdout, value) {
		t.Fatalf("dry run:\n%s", r)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	sh := command(ctx, p.dir, baseEnv("API_TOKEN="+value), "-c", r.stdout)
	sh.Path, sh.Args[0] = "/bin/sh", "sh"
	out, err := sh.CombinedOutput()
	if err != nil || string(out) != fmt.Sprintf("[%s]\n%d\n", value, it.uid) {
		t.Fatalf("running the dry-run script: %v\n%s\nscript:\n%s", err, out, r.stdout)
	}
	// The script made the mount points in the sandbox home as the user, as a run does:
	// the engine (root) made none its owner cannot remove.
	if r := run(t, p.dir, []string{"DOCKER_HOST=" + engineOf(localDocker)}, "", "sandboxes", "rm", p.name()); r.code != 0 {
		t.Errorf("sandboxes rm after the dry-run script:\n%s", r)
	}
}

// sandboxes list shows a kept container with the project's home; rm removes both,
// and the kept container's companion and volumes with them.
func TestDockerSandboxesList(t *testing.T) {
	forEachDocker(t, func(t *testing.T, iso string) {
		p := newProject(t)
		// The home holds a directory its owner cannot list: rm removes it all the same.
		p.mustSandbox(iso, []string{"--keep-container", "--egress=proxy"},
			`echo x > ~/f && mkdir -p ~/locked/in && touch ~/locked/in/f && chmod 000 ~/locked`)
		if c := roleContainers(t, iso, p, false, "companion"); len(c) != 1 {
			t.Fatalf("want the kept container's companion, have %v", c)
		}
		engine := []string{"DOCKER_HOST=" + engineOf(iso)}
		r := run(t, p.dir, engine, "", "sandboxes", "list", "--json")
		if r.code != 0 || !strings.Contains(r.stdout, `"name": "`+p.name()+`"`) || !strings.Contains(r.stdout, `"running": true`) {
			t.Fatalf("sandboxes list:\n%s", r)
		}
		// The table's row names both containers, the kept one and its companion (it
		// named the first the engine listed alone before).
		var listed []struct {
			Name       string   `json:"name"`
			Containers []string `json:"containers"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &listed); err != nil {
			t.Fatalf("sandboxes list --json: %v\n%s", err, r)
		}
		table := run(t, p.dir, engine, "", "sandboxes", "list")
		found := false
		for _, s := range listed {
			if s.Name != p.name() {
				continue
			}
			found = true
			slices.Sort(s.Containers)
			if len(s.Containers) != 2 || !strings.Contains(table.stdout, p.name()+"  ") || !strings.Contains(table.stdout, strings.Join(s.Containers, ",")+" ") {
				t.Errorf("sandboxes list shows not both of %v:\n%s", s.Containers, table)
			}
		}
		if !found {
			t.Errorf("sandboxes list --json lists no %s:\n%s", p.name(), r)
		}
		if r := run(t, p.dir, engine, "", "sandboxes", "rm", p.name()); r.code != 0 {
			t.Fatalf("sandboxes rm:\n%s", r)
		}
		if ids := projectContainers(t, iso, p, true); len(ids) != 0 {
			t.Fatalf("containers left after rm: %v", ids)
		}
		if ids := roleContainers(t, iso, p, true, "companion"); len(ids) != 0 {
			t.Fatalf("companions left after rm: %v", ids)
		}
		if vs := projectVolumes(t, iso, p); len(vs) != 0 {
			t.Fatalf("volumes left after rm: %v", vs)
		}
		if _, err := os.Stat(filepath.Join(it.home, ".local/share/devsandbox", p.name())); !os.IsNotExist(err) {
			t.Fatalf("sandbox home left after rm: %v", err)
		}
	})
}

// keep_container with proxy and allowlist egress: sessions share the kept container and
// reach what their policy allows through the project's stable proxy endpoint, also
// while another session is attached and after it ended; another policy gets another
// container, so a warm exec never keeps a way out its own configuration would not
// give; allowlist rules hold in warm execs.
func TestDockerKeptEgress(t *testing.T) {
	forEachDockerRootless(t, func(t *testing.T, iso string) {
		o := newOutside(t)
		p := newProject(t)
		if err := os.RemoveAll(p.path("proj/.git")); err != nil { // see the restart below
			t.Fatal(err)
		}
		probe := fmt.Sprintf(`curl -sf -m 3 http://%[1]s:8080/ >/dev/null && echo proxy-ok || echo proxy-no
	curl -sf --noproxy '*' -m 3 http://%[1]s:8080/ >/dev/null && echo direct-ok || echo direct-no
	curl -sf --noproxy '*' -m 3 http://%[1]s:8081/ >/dev/null && echo other-ok || echo other-no`, o.addr)
		keep := func(want string, flags ...string) {
			t.Helper()
			if got := p.mustSandbox(iso, append([]string{"--keep-container"}, flags...), probe); got != want {
				t.Fatalf("devsandbox --keep-container %s: got\n%swant\n%s", strings.Join(flags, " "), got, want)
			}
		}
		proxyAllowed := []string{"--egress=proxy", "--allow", o.addr + ":8080"}
		keep("proxy-ok\ndirect-no\nother-no\n", proxyAllowed...)

		// A second session while the first is still attached, then after it ended.
		first := command(t.Context(), p.dir, baseEnv(), append(append([]string{"--isolator=" + iso, "--keep-container"}, proxyAllowed...),
			"--", "/bin/sh", "-c", "echo ready; read line; true")...)
		stdin, _ := first.StdinPipe()
		stdout, _ := first.StdoutPipe()
		if err := first.Start(); err != nil {
			t.Fatal(err)
		}
		newLineReader(t, stdout).waitFor("ready")
		keep("proxy-ok\ndirect-no\nother-no\n", proxyAllowed...)
		stdin.Close()
		if err := first.Wait(); err != nil {
			t.Fatalf("the first session: %v", err)
		}
		keep("proxy-ok\ndirect-no\nother-no\n", proxyAllowed...)
		kept := projectContainers(t, iso, p, true)
		if len(kept) != 1 {
			t.Fatalf("want one kept container for four sessions, have %v", kept)
		}
		// The endpoint directory is writable inside: a socket planted there (the newest)
		// must not receive the sessions' proxy traffic.
		plant := `python3 -c '
import socket
s = socket.socket(socket.AF_UNIX)
s.bind("/run/devsandbox/ep/proxy-planted.sock")
s.listen()
while True:
    c, _ = s.accept()
    try:
        c.sendall(b"HTTP/1.0 200 OK\r\n\r\nPLANTED\n")
    except OSError:
        pass  # the keeper hangs up on a socket served from inside
    c.close()
' &
while [ ! -S /run/devsandbox/ep/proxy-planted.sock ]; do :; done
curl -s -m 3 http://` + o.addr + `:8080/; kill $! 2>/dev/null; true`
		if got := p.mustSandbox(iso, append([]string{"--keep-container"}, proxyAllowed...), plant); got != "OUTSIDE\n" {
			t.Fatalf("through the proxy with a planted socket in the endpoint directory: %q, want OUTSIDE", got)
		}

		// Another policy: another container, without the first one's allowance.
		keep("proxy-no\ndirect-no\nother-no\n", "--egress=proxy")
		if now := projectContainers(t, iso, p, true); len(now) != 1 || now[0] == kept[0] {
			t.Fatalf("another egress policy reused the kept container: %v, before %v", now, kept)
		}

		// Allowlist: the rules are applied once and hold in every warm exec.
		allow := []string{"--egress=allowlist", "--allow", o.addr + ":8080"}
		keep("proxy-ok\ndirect-ok\nother-no\n", allow...)
		keep("proxy-ok\ndirect-ok\nother-no\n", allow...)
		// A restart makes a new network namespace without rules: they are applied
		// again. (The project has no .git: a kept container with anchors — .git
		// in a repository — on an engine older than API 1.45 mounts descriptors of
		// the run that made it and cannot be restarted by hand; devsandbox makes it
		// again.)
		dockerAt(t, iso, "restart", "-t", "0", projectContainers(t, iso, p, false)[0])
		keep("proxy-ok\ndirect-ok\nother-no\n", allow...)
	})
}

// The session's proxy runs in the companion with the host's certificate roots
// (SSL_CERT_FILE) on any image: busybox's /tmp is 0755, a mode the engine copies onto
// the companion's /tmp, so the roots must not need a file there.
func TestDockerProxyRootsOnAnyImage(t *testing.T) {
	forEachDocker(t, func(t *testing.T, iso string) {
		p := newProject(t)
		ca := newTestCA(t)
		p.write("origin-ca.pem", string(ca.pem))
		env := []string{"SSL_CERT_FILE=" + p.path("origin-ca.pem")}
		for _, keep := range [][]string{nil, {"--keep-container"}} {
			args := append([]string{"--isolator=" + iso, "--image", crashImage, "--egress=proxy"}, keep...)
			r := run(t, p.dir, env, "", append(args, "--", "/bin/sh", "-c", "echo started")...)
			if r.code != 0 || r.stdout != "started\n" {
				t.Fatalf("devsandbox %v with SSL_CERT_FILE set:\n%s", keep, r)
			}
		}
	})
}
