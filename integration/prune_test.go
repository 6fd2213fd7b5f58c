//go:build integration

package integration

import (
	"context"
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

// noPodmanConfig writes a --config file whose krun.podman_socket nothing listens on,
// for the tests that run a real `sandboxes prune`: it then leaves the test user's
// podman storage alone (its default images of other builds belong to other
// checkouts' runs), as DOCKER_HOST pointed at nothing leaves the shared engine alone.
// prune warns that podman was not asked. It sets no docker.home (prune starts no
// container): root's runs use it with a home inside the suite's, which the suite's
// docker.home would contain, a refused configuration.
func (p *project) noPodmanConfig() string {
	p.t.Helper()
	p.write("no-podman.toml", "[krun]\nruntime = \"runc\"\npodman_socket = \""+p.path("no-podman.sock")+"\"\n")
	return p.path("no-podman.toml")
}

// isolatedPodman is rootless podman for the test user with a storage, run root and
// runtime directory of its own, and an API service on sock: what prune does to it
// happens to no other test's images.
type isolatedPodman struct {
	dir, sock string
	flags     []string
	service   *exec.Cmd
}

func newIsolatedPodman(t *testing.T) *isolatedPodman {
	t.Helper()
	requirePodman(t)
	dir, err := os.MkdirTemp("/var/tmp", "dsbpm-")
	if err != nil {
		t.Fatal(err)
	}
	ip := &isolatedPodman{dir: dir, sock: filepath.Join(dir, "api.sock")}
	t.Cleanup(func() { ip.remove() })
	for _, d := range []string{dir, filepath.Join(dir, "xdg")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(d, it.uid, it.gid); err != nil {
			t.Fatal(err)
		}
	}
	ip.flags = []string{"--root", filepath.Join(dir, "root"), "--runroot", filepath.Join(dir, "run"), "--storage-driver", "vfs",
		"--cgroup-manager", "cgroupfs", "--events-backend", "file"}
	ip.service = ip.command(append(ip.flags, "system", "service", "--time=0", "unix://"+ip.sock)...)
	ip.service.SysProcAttr.Setpgid = true
	log, err := os.Create(filepath.Join(dir, "service.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	ip.service.Stdout, ip.service.Stderr = log, log
	if err := ip.service.Start(); err != nil {
		t.Fatal(err)
	}
	// Wait for the condition (the socket), not for a time; the deadline only bounds it.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(ip.sock); err == nil {
			break
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(filepath.Join(dir, "service.log"))
			t.Fatalf("the isolated podman service did not listen on %s: %s", ip.sock, b)
		}
	}
	return ip
}

// command is podman as the test user, in the isolated runtime directory.
func (ip *isolatedPodman) command(args ...string) *exec.Cmd {
	cmd := exec.Command("podman", args...)
	cmd.Dir = "/"
	cmd.Env = []string{"HOME=" + it.home, "USER=" + it.name, "PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin", "XDG_RUNTIME_DIR=" + filepath.Join(ip.dir, "xdg")}
	cmd.SysProcAttr = &syscall.SysProcAttr{}
	if it.asOther {
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: uint32(it.uid), Gid: uint32(it.gid)}
	}
	return cmd
}

// podman runs the podman CLI on the isolated storage and returns its trimmed output.
func (ip *isolatedPodman) podman(t *testing.T, args ...string) string {
	t.Helper()
	out, err := ip.command(append(slices.Clone(ip.flags), args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("podman %s (isolated): %v: %s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// remove stops the service and the pause process of the runtime directory, then
// removes everything (as root: the storage holds files of the user's subordinate ids).
func (ip *isolatedPodman) remove() {
	if ip.service != nil && ip.service.Process != nil {
		_ = syscall.Kill(-ip.service.Process.Pid, syscall.SIGKILL)
		_ = ip.service.Wait()
	}
	if b, err := os.ReadFile(filepath.Join(ip.dir, "xdg", "libpod", "tmp", "pause.pid")); err == nil {
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 1 {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	_ = os.RemoveAll(ip.dir)
}

// `sandboxes prune` removes the default images of other devsandbox builds that no
// container uses, from the docker engine and from podman, and nothing else: not the
// current build's, not one in use, not a user's image built FROM the default image
// (same labels, its own name). --dry-run names them and removes nothing. A throwaway
// engine and an isolated podman store: no other test's images are touched.
func TestPruneOtherBuildsImages(t *testing.T) {
	requireBwrap(t)
	te := newThrowawayEngine(t, "devsandbox-test/busybox:1")
	ip := newIsolatedPodman(t)
	out, err := exec.Command(it.bin, "version").Output()
	if err != nil {
		t.Fatal(err)
	}
	cur := strings.TrimPrefix(strings.TrimSpace(string(out)), "devsandbox ")
	const old, used = "0000000-it-old", "0000001-it-used"
	// name → the version its labels name.
	images := [][2]string{
		{"devsandbox/default:" + cur, cur}, {"devsandbox/default:" + old, old},
		{"devsandbox/default:" + used, used}, {"devsandbox-test/mine:1", old},
	}
	tar := filepath.Join(ip.dir, "busybox.tar")
	if out, err := exec.Command("docker", "save", "-o", tar, "devsandbox-test/busybox:1").CombinedOutput(); err != nil {
		t.Fatalf("docker save: %v: %s", err, out)
	}
	_ = os.Chown(tar, it.uid, it.gid)
	ip.podman(t, "load", "-q", "-i", tar)
	dockerID, podmanID := map[string]string{}, map[string]string{}
	for _, im := range images {
		labels := []string{"--change", "LABEL dev.devsandbox.image=default", "--change", "LABEL dev.devsandbox.version=" + im[1]}
		cid := te.docker(t, "create", "devsandbox-test/busybox:1", "true")
		te.docker(t, append(append([]string{"commit"}, labels...), cid, im[0])...)
		te.docker(t, "rm", cid)
		dockerID[im[0]] = strings.TrimPrefix(te.docker(t, "image", "inspect", "--format", "{{.Id}}", im[0]), "sha256:")[:12]
		pcid := ip.podman(t, "create", "devsandbox-test/busybox:1", "true")
		ip.podman(t, append(append([]string{"commit", "-q"}, labels...), pcid, im[0])...)
		ip.podman(t, "rm", pcid)
		podmanID[im[0]] = strings.TrimPrefix(ip.podman(t, "image", "inspect", "--format", "{{.Id}}", im[0]), "sha256:")[:12]
	}
	// A container (not running) uses the used build's image in each engine.
	te.docker(t, "create", "devsandbox/default:"+used, "true")
	ip.podman(t, "create", "devsandbox/default:"+used, "true")

	p := newProject(t)
	cfg := p.writeConfig("", "prune.toml", "[docker]\nhost = \""+te.host+"\"\n[krun]\nruntime = \"runc\"\npodman_socket = \""+ip.sock+"\"\n")
	oldWhy := "the default image of devsandbox " + old + ", this is " + cur
	usedWhy := "the default image of devsandbox " + used + ", this is " + cur
	lines := func(verb string) []string {
		return []string{
			verb + " image " + podmanID["devsandbox/default:"+old] + " (devsandbox/default:" + old + ") in podman: " + oldWhy,
			"kept image " + podmanID["devsandbox/default:"+used] + " (devsandbox/default:" + used + ") in podman: " + usedWhy + ", but 1 container(s) use it",
			verb + " image " + dockerID["devsandbox/default:"+old] + " (devsandbox/default:" + old + "): " + oldWhy,
			"kept image " + dockerID["devsandbox/default:"+used] + " (devsandbox/default:" + used + "): " + usedWhy + ", but 1 container(s) use it",
		}
	}
	imageLines := func(out string) []string {
		var l []string
		for _, s := range strings.Split(out, "\n") {
			if strings.Contains(s, " image ") {
				l = append(l, s)
			}
		}
		slices.Sort(l)
		return l
	}
	left := func() (docker, podman []string) {
		for _, im := range images {
			if te.command("image", "inspect", im[0]).Run() == nil {
				docker = append(docker, im[0])
			}
			if ip.command(append(slices.Clone(ip.flags), "image", "exists", im[0])...).Run() == nil {
				podman = append(podman, im[0])
			}
		}
		return docker, podman
	}
	all := []string{images[0][0], images[1][0], images[2][0], images[3][0]}
	for _, dry := range []bool{true, false} {
		args := []string{"--config", cfg, "sandboxes", "prune"}
		verb, want := "removed", []string{images[0][0], images[2][0], images[3][0]}
		if dry {
			args, verb, want = append(args, "--dry-run"), "would remove", all
		}
		r := run(t, p.dir, nil, "", args...)
		wantLines := lines(verb)
		slices.Sort(wantLines)
		if got := imageLines(r.stdout); r.code != 0 || !slices.Equal(got, wantLines) {
			t.Errorf("prune (dry run %v): image lines %q\nwant %q\n%s", dry, got, wantLines, r)
		}
		if d, pm := left(); !slices.Equal(d, want) || !slices.Equal(pm, want) {
			t.Errorf("after prune (dry run %v): docker has %q, podman has %q; want %q in each", dry, d, pm, want)
		}
	}
}

// `sandboxes prune --days 0` while a run of the project goes on, on every isolator:
// the project's last use is when the run started, so it is "unused for 0 days", but its
// home and state directory are in use and stay (here --dry-run: it would have removed
// them). bwrap runs are seen by their session /tmp, krun and docker runs by the run
// mark they hold (in the state directory's runs/); a docker run's running container
// keeps it too. The engine answers (prune needs it to know what is in use); --dry-run
// touches nothing of other tests'.
func TestPruneKeepsRunningSandbox(t *testing.T) {
	if !slices.Contains(isolators(), localDocker) {
		t.Skip("needs docker among DEVSANDBOX_IT_ISOLATORS")
	}
	forEachIsolatorOf(t, embedIsolators(), func(t *testing.T, iso string) {
		pruneKeepsRunning(t, iso)
	})
}

// TestPruneKeepsRunningSandbox for a bwrap run with /tmp in memory (sandbox.tmp =
// "tmpfs"): it has no session /tmp in the state directory, and holds the project's
// run mark instead.
func TestPruneKeepsRunningInMemoryTmp(t *testing.T) {
	if !slices.Contains(isolators(), "bwrap") || !slices.Contains(isolators(), localDocker) {
		t.Skip("needs bwrap and docker among DEVSANDBOX_IT_ISOLATORS")
	}
	requireBwrap(t)
	p := newProject(t)
	cfg := p.writeConfig("", "tmpfs.toml", "[sandbox]\ntmp = \"tmpfs\"\n")
	cmd := command(context.Background(), p.dir, baseEnv(embedXDG(p.root)...), "--config", cfg, "--isolator=bwrap", "--", "/bin/sh", "-c", "echo started; read x")
	lr, release := started(t, cmd)
	defer release()
	lr.waitFor("started")
	assertPruneKeeps(t, p, "bwrap with /tmp in memory", true)
}

// pruneKeepsRunning runs `sandboxes prune --days 0 --dry-run` while a run of iso
// goes on, older than the minute prune grants a starting run.
func pruneKeepsRunning(t *testing.T, iso string) {
	t.Helper()
	p := newProject(t)
	live := startEmbed(t, embedJob{Iso: iso, Dirs: []string{p.dir}, Script: `echo started; sleep 1000`}, p.root)
	live.lines.waitFor("out 0 started")
	t.Cleanup(func() {
		_ = live.cmd.Process.Kill()
		_ = live.cmd.Wait()
	})
	// Its session dirs made two minutes ago: prune asks their lock, as it would
	// during a long run (a run mark's it always asks).
	state := filepath.Join(p.root, "state", "devsandbox", p.name())
	sess, _ := filepath.Glob(filepath.Join(state, "tmp", "*"))
	marks, _ := filepath.Glob(filepath.Join(state, "runs", "run-*"))
	if len(sess)+len(marks) == 0 {
		t.Fatalf("the %s run holds neither a session dir nor a run mark in its state directory", iso)
	}
	for _, d := range sess {
		old := time.Now().Add(-2 * time.Minute)
		if err := os.Chtimes(d, old, old); err != nil {
			t.Fatal(err)
		}
	}
	// A docker run's running container keeps the sandbox before the mark is asked,
	// without the line.
	assertPruneKeeps(t, p, iso, iso != localDocker)
}

// assertPruneKeeps runs `sandboxes prune --days 0 --dry-run` and fails when it would
// remove p's sandbox, or, with saysKept, when it does not say it kept it for a run.
func assertPruneKeeps(t *testing.T, p *project, what string, saysKept bool) {
	t.Helper()
	r := run(t, p.dir, append(embedXDG(p.root), "DOCKER_HOST="+engineOf(localDocker)), "", "--config", p.noPodmanConfig(), "sandboxes", "prune", "--days", "0", "--dry-run")
	want := "kept " + p.name() + " (unused for 0 days): a run of it is going on\n"
	if r.code != 0 || (saysKept && !strings.Contains(r.stdout, want)) || strings.Contains(r.stdout, "would remove "+p.name()) {
		t.Fatalf("prune --days 0 during a %s run:\n%s\nwant no removal of %s (and the line %q: %v)", what, r, p.name(), want, saysKept)
	}
}
