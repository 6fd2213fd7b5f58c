//go:build integration

package integration

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// hostileImageEnv is an image's ENV that tunes any Go program started with it: the
// TLS stack's compatibility switches (RSA key exchange, TLS 1.0 on a server), a
// traceback that dumps core, the number of Ps; and a marker of its own.
const hostileImageEnv = `GODEBUG=tlsrsakex=1,tls10server=1 GOTRACEBACK=crash GOMAXPROCS=3 ` +
	`PATH=/dsbie/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin`

// hostileLabels are an image's labels that would say, on devsandbox's containers,
// that they belong to another project and user, are kept, or have another role.
var hostileLabels = map[string]string{
	"dev.devsandbox.project": "deadbeef", "dev.devsandbox.name": "hostile-deadbeef", "dev.devsandbox.dir": "/hostile",
	"dev.devsandbox.uid": "4242", "dev.devsandbox.kept": "true", "dev.devsandbox.role": "hostile",
	"dev.devsandbox.session": "hostile", "dev.devsandbox.spec": "hostile", "dev.devsandbox.version": "hostile",
	"dev.devsandbox.owner": "hostile",
}

// hostileImage builds, on iso's engine, an image FROM the test's Debian with
// hostileImageEnv, hostileLabels and the label dsbie.marker=marker, and returns its
// tag; the image and those derived from it go with the test.
func hostileImage(t *testing.T, iso, marker string) string {
	t.Helper()
	tag := "devsandbox-test/imageenv:" + strings.ToLower(randHex(4))
	t.Cleanup(func() {
		if ids, err := dockerCmd(iso, "images", "-q", "--filter", "label=dev.devsandbox.base-ref="+tag).Output(); err == nil && len(ids) > 0 {
			_ = dockerCmd(iso, append([]string{"rmi", "-f"}, strings.Fields(string(ids))...)...).Run()
		}
		_ = dockerCmd(iso, "rmi", "-f", tag).Run()
	})
	df := "FROM devsandbox-test/debian:3\nENV " + hostileImageEnv + " DSBIE=" + marker + "\nLABEL dsbie.marker=" + marker
	for k, v := range hostileLabels {
		df += " " + k + "=" + v
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte(df+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := dockerCmd(iso, "build", "-q", "-t", tag, dir).CombinedOutput(); err != nil {
		t.Fatalf("building the image: %v\n%s", err, out)
	}
	return tag
}

// An image's ENV is the command's, as documented, and none of devsandbox's own
// programs': the companion proxy (which holds the session's credentials and MITM CA
// key) must not start with the image's GODEBUG (the TLS compatibility switches),
// GOTRACEBACK or GOMAXPROCS. Read from the kept companion's main process, which the
// engine starts as it starts the session's proxy in it.
func TestImageEnvReachesNoDevsandboxProgram(t *testing.T) {
	forEachIsolatorOf(t, withRootless(dockerVariants()), func(t *testing.T, iso string) {
		marker := "DSBIE-" + randHex(6)
		tag := hostileImage(t, iso, marker)
		p := newProject(t)
		engine := []string{"DOCKER_HOST=" + engineOf(iso)}
		t.Cleanup(func() { run(t, p.dir, engine, "", "sandboxes", "rm", p.name()) })
		script := `echo "$GODEBUG|$GOTRACEBACK|$GOMAXPROCS|$DSBIE|$PATH"`
		want := "tlsrsakex=1,tls10server=1|crash|3|" + marker + "|/dsbie/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\n"
		for _, keep := range []bool{false, true} {
			args := []string{"--isolator=" + iso, "--image=" + tag, "--egress=proxy"}
			if keep {
				args = append(args, "--keep-container")
			}
			if r := run(t, p.dir, nil, "", append(args, "--", "/bin/sh", "-c", script)...); r.code != 0 || r.stdout != want {
				t.Fatalf("keep=%v: want the command to have the image's ENV (%q):\n%s", keep, want, r)
			}
		}
		// Read from this host: the companion's main process is not dumpable, so no
		// process of the companion reads it.
		px := "devsandbox-" + p.name() + "-px"
		pid := strings.TrimSpace(dockerAt(t, iso, "inspect", "--format", "{{.State.Pid}}", px))
		if cmd, _ := os.ReadFile("/proc/" + pid + "/cmdline"); !strings.Contains(string(cmd), "companion\x00hold") {
			t.Fatalf("process %s is not the kept companion's main process: %q", pid, cmd)
		}
		out, err := os.ReadFile("/proc/" + pid + "/environ")
		if err != nil {
			t.Fatalf("reading the kept companion's environment: %v", err)
		}
		env := strings.Split(strings.TrimRight(string(out), "\x00"), "\x00")
		var leaked []string
		for _, kv := range env {
			k, v, _ := strings.Cut(kv, "=")
			if k == "GODEBUG" || k == "GOTRACEBACK" || k == "GOMAXPROCS" || k == "DSBIE" || k == "PATH" && strings.Contains(v, "/dsbie/") {
				leaked = append(leaked, kv)
			}
		}
		if len(leaked) > 0 || len(env) == 0 {
			t.Errorf("the companion proxy (devsandbox-proxy, given the credentials and the CA key) started with the image's %q (its whole environment: %q); want none of the image's ENV", leaked, env)
		}
	})
}

// An image's dev.devsandbox.* labels are on none of the containers devsandbox makes
// from it (the engine gives a container its image's labels under its own): each of
// them, helpers included, carries devsandbox's value or none, so a helper left by a
// killed run is neither kept for good nor listed under another project, and
// `sandboxes list` shows no other project. Each container's labels are read from the
// engine's create event.
func TestImageLabelsNotDevsandboxs(t *testing.T) {
	forEachIsolatorOf(t, withRootless(dockerVariants()), func(t *testing.T, iso string) {
		marker := "dsbie" + randHex(6)
		tag := hostileImage(t, iso, marker)
		p := newProject(t)
		engine := []string{"DOCKER_HOST=" + engineOf(iso)}
		t.Cleanup(func() { run(t, p.dir, engine, "", "sandboxes", "rm", p.name()) })
		// After the image's build (whose own containers have its labels).
		now := time.Now()
		since := fmt.Sprintf("%d.%09d", now.Unix(), now.Nanosecond())
		for _, keep := range []bool{false, true} {
			args := []string{"--isolator=" + iso, "--image=" + tag, "--egress=proxy"}
			if keep {
				args = append(args, "--keep-container")
			}
			if r := run(t, p.dir, nil, "", append(args, "--", "true")...); r.code != 0 {
				t.Fatalf("keep=%v:\n%s", keep, r)
			}
		}
		until := strconv.FormatInt(time.Now().Add(time.Second).Unix(), 10)
		out, err := dockerCmd(iso, "events", "--since", since, "--until", until, "--filter", "type=container", "--filter", "event=create",
			"--filter", "label=dsbie.marker="+marker, "--format", "{{json .Actor.Attributes}}").Output()
		if err != nil {
			t.Fatalf("docker events: %v", err)
		}
		kept := map[string]bool{"devsandbox-" + p.name(): true, "devsandbox-" + p.name() + "-px": true}
		n := 0
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			var attrs map[string]string
			if err := json.Unmarshal([]byte(line), &attrs); err != nil {
				t.Fatalf("docker events: %v: %q", err, line)
			}
			n++
			for k, v := range hostileLabels {
				if attrs[k] == v && !(k == "dev.devsandbox.kept" && kept[attrs["name"]]) {
					t.Errorf("the container %s devsandbox made has the image's label %s=%s", attrs["name"], k, v)
				}
			}
		}
		// The home volume's helper, the companion and the sandbox of each run at least.
		if n < 4 {
			t.Fatalf("saw %d containers made from the image, want at least 4 (the check above proves nothing):\n%s", n, out)
		}
		r := run(t, p.dir, engine, "", "sandboxes", "list", "--json")
		if r.code != 0 || strings.Contains(r.stdout, "hostile") || strings.Contains(r.stdout, "deadbeef") || !strings.Contains(r.stdout, p.name()) {
			t.Errorf("sandboxes list shows the image's project or not this one's:\n%s", r)
		}
	})
}

// An image's ENV reaches no devsandbox program on krun either (podman merges it into
// the container's as docker does): the init, PID 1 of the container, must not start
// with the image's GODEBUG, GOTRACEBACK or GOMAXPROCS; the command still has them.
// The init is not dumpable, so its environment is read from the host while the
// command waits.
func TestKrunImageEnvReachesNoInit(t *testing.T) {
	requirePodman(t)
	marker := "DSBIE-" + randHex(6)
	tag := "localhost/devsandbox-test/imageenv:" + strings.ToLower(randHex(4))
	dir, err := os.MkdirTemp("", "dsbie-") // the test user's podman reads it
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	df := "FROM " + krunImage + "\nENV " + hostileImageEnv + " DSBIE=" + marker + "\n"
	if err := os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte(df), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = podmanAs("rmi", "-f", tag) })
	mustPodman(t, "build", "-q", "-t", tag, dir)
	p := newProject(t)
	krunInitEnvClean(t, p, tag, marker)
}

// krunInitEnvClean runs p on krun with image tag (built FROM krunImage with
// hostileImageEnv and DSBIE=marker): the command has the image's ENV, the init
// (PID 1, read from the host while the command waits) none of it but PATH.
func krunInitEnvClean(t *testing.T, p *project, tag, marker string) {
	t.Helper()
	script := `echo "ready $GODEBUG|$GOTRACEBACK|$GOMAXPROCS|$DSBIE|$PATH"; read x`
	cmd := command(t.Context(), p.dir, baseEnv(), "--isolator=krun", "--image="+tag, "--", "/bin/sh", "-c", script)
	lines, release := started(t, cmd)
	want := "ready tlsrsakex=1,tls10server=1|crash|3|" + marker + "|/dsbie/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	if got := lines.waitForIn(90*time.Second, "ready"); got != want {
		t.Errorf("want the command to have the image's ENV:\nhave %q\nwant %q", got, want)
	}
	ids := krunContainers(t, p, false)
	if len(ids) != 1 {
		t.Fatalf("want the run's container, have %v", ids)
	}
	pid := mustPodman(t, "inspect", "--format", "{{.State.Pid}}", ids[0])
	raw, err := os.ReadFile("/proc/" + pid + "/environ")
	if err != nil {
		t.Fatalf("reading the init's environment: %v", err)
	}
	release()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the run: %v", err)
	}
	env := strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00")
	var leaked []string
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if k == "GODEBUG" || k == "GOTRACEBACK" || k == "GOMAXPROCS" || k == "DSBIE" {
			leaked = append(leaked, kv)
		}
	}
	if len(leaked) > 0 || len(env) == 0 {
		t.Errorf("the sandbox's init (PID 1, devsandbox's) started with the image's %q (its whole environment: %q); want none of the image's ENV but PATH", leaked, env)
	}
}

// The krun run remembers an image reference's ID and ENV (the next run spares the
// image's inspect) and checks it against the image podman made the container from:
// a reference retagged to an image with a hostile ENV after a run recorded it must
// still keep that ENV from the init, on the first run after the retag (the record is
// stale: the container is made again) and the next (the record is the new image's).
func TestKrunImageEnvRetagged(t *testing.T) {
	requirePodman(t)
	marker := "DSBIE-" + randHex(6)
	tag := "localhost/devsandbox-test/imageenv:" + strings.ToLower(randHex(4))
	dir, err := os.MkdirTemp("", "dsbie-") // the test user's podman reads it
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	build := func(env string) string {
		if err := os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte("FROM "+krunImage+"\nENV "+env+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		mustPodman(t, "build", "-q", "-t", tag, dir)
		id := strings.TrimSpace(mustPodman(t, "image", "inspect", "--format", "{{.Id}}", tag))
		t.Cleanup(func() { _, _ = podmanAs("rmi", "-f", id) })
		return id
	}
	plain := build("DSBIE=plain")
	p := newProject(t)
	cmd := command(t.Context(), p.dir, baseEnv(), "--isolator=krun", "--image="+tag, "--", "/bin/sh", "-c", `echo "$DSBIE"`)
	if out, err := cmd.Output(); err != nil || strings.TrimSpace(string(out)) != "plain" {
		t.Fatalf("the run of the first image: %v, %q", err, out)
	}
	if hostile := build(hostileImageEnv + " DSBIE=" + marker); hostile == plain {
		t.Fatal("the retag made the same image")
	}
	for _, run := range []string{"after the retag", "again"} {
		t.Run(strings.ReplaceAll(run, " ", "-"), func(t *testing.T) { krunInitEnvClean(t, p, tag, marker) })
	}
}

// krun's image ENV records are pruned: a record of an image podman does not have goes
// (`sandboxes prune` asks podman by the recorded ID), the record the launch just
// wrote stays, and the dry run before removes nothing and either names the record or
// says it did not ask podman (no service running).
func TestKrunImageEnvRecordsPruned(t *testing.T) {
	requirePodman(t)
	p := newProject(t)
	p.mkdir("state")
	env := []string{"XDG_STATE_HOME=" + p.path("state"), "DOCKER_HOST=unix://" + p.path("no-engine.sock")}
	if r := run(t, p.dir, env, "", "--isolator=krun", "--", "true"); r.code != 0 {
		t.Fatalf("the krun launch failed:\n%s", r)
	}
	dir := filepath.Join(p.path("state"), "devsandbox", "krun-image-env")
	made, err := os.ReadDir(dir)
	if err != nil || len(made) != 1 {
		t.Fatalf("the launch's records in %s: %v, %v; want one", dir, made, err)
	}
	kept := filepath.Join(dir, made[0].Name())
	ref, id := "localhost/devsandbox-test/gone:"+randHex(4), strings.Repeat("0", 48)+strings.ToLower(randHex(8))
	sum := sha256.Sum256([]byte(ref))
	gone := filepath.Join(dir, hex.EncodeToString(sum[:16]))
	b, _ := json.Marshal(map[string]any{"ref": ref, "id": id, "env": []string{}})
	if err := os.WriteFile(gone, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(gone, it.uid, it.gid); err != nil {
		t.Fatal(err)
	}
	line := ": the ENV of image " + ref + " (" + id[:12] + "), recorded for krun's launches, but podman no longer has that image"
	dry := run(t, p.root, env, "", "sandboxes", "prune", "--dry-run")
	if !strings.Contains(dry.stdout, "would remove "+gone+line) && !strings.Contains(dry.stdout, "not checked: whether podman still has the images of 2 image ENV record(s) of krun in "+dir) {
		t.Errorf("prune --dry-run names neither the record of a gone image nor what it did not check:\n%s", dry)
	}
	r := run(t, p.root, env, "", "sandboxes", "prune")
	if !strings.Contains(r.stdout, "removed "+gone+line+"\n") || lexists(gone) {
		t.Errorf("prune did not remove (or name) the record of an image podman does not have, %s:\n%s", gone, r)
	}
	if !lexists(kept) || strings.Contains(dry.stdout+r.stdout, kept) {
		t.Errorf("prune removed (or would) the launch's record %s:\ndry run: %s\nprune: %s", kept, dry, r)
	}
}
