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
// container uses and no run of the user used within --days (30), from the docker engine
// and from podman, and nothing else: not the current build's, not one in use, not one
// a run used 2 days ago (the record in the user's state, package imageuse), not one made
// 3 days ago of which no use is recorded, not another uid's in the shared docker engine
// (its runs' records are not this user's; podman's storage is the user's alone), not a
// user's image built FROM the default image (same labels, its own name). One used 40
// days ago goes, and its record with it, as does one made 100 days ago of which no use
// is recorded; so does an image derived from this build's default image for a content
// no run uses any more, made 100 days ago, while one a run used 2 days ago stays.
// --dry-run says why each goes or stays and removes nothing. A throwaway
// engine, an isolated podman store and a state directory of the test's own: no other
// test's images or records are touched.
func TestPruneOtherBuildsImages(t *testing.T) {
	requireBwrap(t)
	te := newThrowawayEngine(t, "devsandbox-test/busybox:1")
	ip := newIsolatedPodman(t)
	out, err := exec.Command(it.bin, "version").Output()
	if err != nil {
		t.Fatal(err)
	}
	cur := strings.TrimPrefix(strings.TrimSpace(string(out)), "devsandbox ")
	day := 24 * time.Hour
	now := time.Now()
	// Half a day off whole days: the ages prune prints are stable however long the
	// test takes.
	aged := func(days int) time.Time { return now.Add(-time.Duration(days)*day - 12*time.Hour) }
	type img struct {
		name, version string
		created       time.Time // zero: made now (docker commit)
		uid           string    // the builder's, as `image build` labels it
		used          time.Time // the recorded last use; zero: none
	}
	const old, used, recent, stale, fresh, other = "0000000-it-old", "0000001-it-used", "0000002-it-recent", "0000003-it-stale", "0000004-it-fresh", "0000005-it-other"
	images := []img{
		{name: "devsandbox/default:" + cur, version: cur}, {name: "devsandbox/default:" + old, version: old, created: aged(100)},
		{name: "devsandbox/default:" + used, version: used}, {name: "devsandbox-test/mine:1", version: old},
		{name: "devsandbox/default:" + recent, version: recent, created: aged(100), used: now.Add(-2*day - time.Hour)},
		{name: "devsandbox/default:" + stale, version: stale, created: aged(100), used: now.Add(-40*day - time.Hour)},
		{name: "devsandbox/default:" + fresh, version: fresh, created: aged(3)},
		{name: "devsandbox/default:" + other, version: other, created: aged(100), uid: "4242"},
	}
	busybox := savedImage(t, "devsandbox-test/busybox:1")
	tar := filepath.Join(ip.dir, "busybox.tar")
	if err := os.WriteFile(tar, busybox, 0o644); err != nil {
		t.Fatal(err)
	}
	_ = os.Chown(tar, it.uid, it.gid)
	ip.podman(t, "load", "-q", "-i", tar)
	p := newProject(t)
	state := p.path("state")
	records := filepath.Join(state, "devsandbox", "image-use")
	p.mkdir("state/devsandbox/image-use")
	record := func(engine, id string, at time.Time) string {
		f := filepath.Join(records, engine+"-"+id)
		if err := os.WriteFile(f, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(f, it.uid, it.gid); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(f, at, at); err != nil {
			t.Fatal(err)
		}
		return f
	}
	dockerID, podmanID := map[string]string{}, map[string]string{}
	for _, im := range images {
		labels := map[string]string{"dev.devsandbox.image": "default", "dev.devsandbox.version": im.version}
		if im.uid != "" {
			labels["dev.devsandbox.uid"] = im.uid
		}
		if im.created.IsZero() {
			var changes []string
			for k, v := range labels {
				changes = append(changes, "--change", "LABEL "+k+"="+v)
			}
			cid := te.docker(t, "create", "devsandbox-test/busybox:1", "true")
			te.docker(t, append(append([]string{"commit"}, changes...), cid, im.name)...)
			te.docker(t, "rm", cid)
			pcid := ip.podman(t, "create", "devsandbox-test/busybox:1", "true")
			ip.podman(t, append(append([]string{"commit", "-q"}, changes...), pcid, im.name)...)
			ip.podman(t, "rm", pcid)
		} else {
			archive := filepath.Join(ip.dir, "aged.tar")
			agedImage(t, busybox, archive, im.name, labels, im.created)
			te.docker(t, "load", "-q", "-i", archive)
			ip.podman(t, "load", "-q", "-i", archive)
		}
		dockerID[im.name] = strings.TrimPrefix(te.docker(t, "image", "inspect", "--format", "{{.Id}}", im.name), "sha256:")
		podmanID[im.name] = strings.TrimPrefix(ip.podman(t, "image", "inspect", "--format", "{{.Id}}", im.name), "sha256:")
		if !im.used.IsZero() {
			record("docker", dockerID[im.name], im.used)
			record("podman", podmanID[im.name], im.used)
		}
	}
	// Two images derived from this build's default image for a content no run ships
	// now (docker only: krun derives none), as a run labels them: one made 100 days
	// ago and never recorded, one a run used 2 days ago.
	curID := "sha256:" + dockerID["devsandbox/default:"+cur]
	derivedOld, derivedRecent := "devsandbox-test/derived-old:1", "devsandbox-test/derived-recent:1"
	for _, d := range []struct {
		name, content string
		used          time.Time
	}{{derivedOld, "00000000000000000000000000000000", time.Time{}}, {derivedRecent, "11111111111111111111111111111111", now.Add(-2*day - time.Hour)}} {
		archive := filepath.Join(ip.dir, "aged.tar")
		agedImage(t, busybox, archive, d.name, map[string]string{"dev.devsandbox.base": curID, "dev.devsandbox.base-ref": "devsandbox/default:" + cur,
			"dev.devsandbox.content": d.content, "dev.devsandbox.version": cur, "dev.devsandbox.uid": strconv.Itoa(it.uid)}, aged(100))
		te.docker(t, "load", "-q", "-i", archive)
		dockerID[d.name] = strings.TrimPrefix(te.docker(t, "image", "inspect", "--format", "{{.Id}}", d.name), "sha256:")
		if !d.used.IsZero() {
			record("docker", dockerID[d.name], d.used)
		}
		images = append(images, img{name: d.name})
	}
	// A container (not running) uses the used build's image in each engine.
	te.docker(t, "create", "devsandbox/default:"+used, "true")
	ip.podman(t, "create", "devsandbox/default:"+used, "true")

	cfg := p.writeConfig("", "prune.toml", "[docker]\nhost = \""+te.host+"\"\n[krun]\nruntime = \"runc\"\npodman_socket = \""+ip.sock+"\"\n")
	why := func(v string) string { return "the default image of devsandbox " + v + ", this is " + cur }
	lines := func(verb string) []string {
		var l []string
		for _, e := range []struct {
			id map[string]string
			in string
		}{{dockerID, ""}, {podmanID, " in podman"}} {
			id := func(v string) string {
				return e.id["devsandbox/default:"+v][:12] + " (devsandbox/default:" + v + ")" + e.in
			}
			l = append(l,
				verb+" image "+id(old)+": "+why(old)+", no use of it is recorded and it was made 100 days ago",
				"kept image "+id(used)+": "+why(used)+", but 1 container(s) use it",
				"kept image "+id(recent)+": "+why(recent)+", but a run used it 2 days ago",
				verb+" image "+id(stale)+": "+why(stale)+", and no run used it for 40 days",
				"kept image "+id(fresh)+": "+why(fresh)+", but it was made 3 days ago (no use of it is recorded yet)")
			if e.in == "" {
				derived := " (devsandbox/default:" + cur + "): derived from it by this devsandbox (" + cur + ")"
				l = append(l, "kept image "+id(other)+": "+why(other)+", but user 4242 built it, whose runs this prune cannot see",
					verb+" image "+e.id[derivedOld][:12]+derived+", no use of it is recorded and it was made 100 days ago",
					"kept image "+e.id[derivedRecent][:12]+derived+", but a run used it 2 days ago")
			} else {
				l = append(l, verb+" image "+id(other)+": "+why(other)+", no use of it is recorded and it was made 100 days ago")
			}
		}
		slices.Sort(l)
		return l
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
			if te.command("image", "inspect", im.name).Run() == nil {
				docker = append(docker, im.name)
			}
			if ip.command(append(slices.Clone(ip.flags), "image", "exists", im.name)...).Run() == nil {
				podman = append(podman, im.name)
			}
		}
		return docker, podman
	}
	var all []string
	for _, im := range images {
		all = append(all, im.name)
	}
	gone := func(names ...string) []string {
		return slices.DeleteFunc(slices.Clone(all), func(n string) bool { return slices.Contains(names, n) })
	}
	env := []string{"XDG_STATE_HOME=" + state, "XDG_DATA_HOME=" + p.path("data")}
	for _, dry := range []bool{true, false} {
		args := []string{"--config", cfg, "sandboxes", "prune"}
		verb := "removed"
		wantDocker := gone("devsandbox/default:"+old, "devsandbox/default:"+stale, derivedOld)
		wantPodman := gone("devsandbox/default:"+old, "devsandbox/default:"+stale, "devsandbox/default:"+other, derivedOld, derivedRecent)
		if dry {
			args, verb, wantDocker = append(args, "--dry-run"), "would remove", all
			wantPodman = gone(derivedOld, derivedRecent)
		}
		r := run(t, p.dir, env, "", args...)
		if got, want := imageLines(r.stdout), lines(verb); r.code != 0 || !slices.Equal(got, want) {
			t.Errorf("prune (dry run %v): image lines\n%s\nwant\n%s\n%s", dry, strings.Join(got, "\n"), strings.Join(want, "\n"), r)
		}
		if d, pm := left(); !slices.Equal(d, wantDocker) || !slices.Equal(pm, wantPodman) {
			t.Errorf("after prune (dry run %v): docker has %q, want %q; podman has %q, want %q", dry, d, wantDocker, pm, wantPodman)
		}
	}
	// The removed images' records went with them; the kept one's stayed.
	for _, c := range []struct {
		engine, id string
		kept       bool
	}{{"docker", dockerID["devsandbox/default:"+stale], false}, {"podman", podmanID["devsandbox/default:"+stale], false},
		{"docker", dockerID["devsandbox/default:"+recent], true}, {"podman", podmanID["devsandbox/default:"+recent], true}} {
		if _, err := os.Stat(filepath.Join(records, c.engine+"-"+c.id)); (err == nil) != c.kept {
			t.Errorf("the record of %s image %s: %v, want kept %v", c.engine, c.id[:12], err, c.kept)
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
