//go:build integration

package integration

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestPlantedHostProgramNotRun: devsandbox looks bubblewrap and pasta up on the PATH
// it was started with, and runs them on the host, outside every namespace. A PATH
// entry in the project (an activated `.venv/bin`, `npm run`'s `node_modules/.bin`,
// direnv's `PATH_add bin`) is a directory the sandbox writes: a program it plants
// there under bwrap's or pasta's name is found first by the next launch. That launch
// must refuse it, naming it, and run nothing of it: the planted program leaves a mark
// in a host directory the sandbox does not see, then runs the real one.
func TestPlantedHostProgramNotRun(t *testing.T) {
	requireBwrap(t)
	for _, c := range []struct {
		prog  string
		flags []string
	}{
		{"bwrap", []string{"--egress=none"}},
		{"pasta", []string{"--egress=allowlist", "--allow=10.231.255.1:9"}},
	} {
		t.Run(c.prog, func(t *testing.T) {
			real, err := exec.LookPath(c.prog)
			if err != nil {
				if os.Getenv("CI") != "" {
					t.Fatalf("%s is required in CI: %v", c.prog, err)
				}
				t.Skipf("%s not installed", c.prog)
			}
			p := newProject(t)
			p.mkdir("outside")
			marker := filepath.Join(p.path("outside"), "ran")
			venv := filepath.Join(p.dir, ".venv", "bin")
			env, state := p.earlyEnv("PATH=" + venv + ":" + strings.TrimPrefix(hostPath("/usr/local/bin:/usr/bin:/bin"), "PATH="))
			planted := "#!/bin/sh\necho \"$0\" >> " + marker + "\nexec " + real + " \"$@\"\n"
			// The launch to come, once before the planting: its record names the
			// real bubblewrap.
			next := append(append([]string{"--isolator=bwrap", "--debug"}, c.flags...), "--", "/bin/true")
			if r := run(t, p.dir, env, "", next...); r.code != 0 {
				t.Fatalf("the first launch failed:\n%s", r)
			}
			recs := records(t, state)
			var good []byte
			if len(recs) == 1 {
				good, _ = os.ReadFile(recs[0])
			}
			args := append(append([]string{"--isolator=bwrap", "--debug"}, c.flags...), "--", "/bin/sh", "-c",
				"mkdir -p .venv/bin && cat > .venv/bin/"+c.prog+" && chmod 755 .venv/bin/"+c.prog)
			if r := run(t, p.dir, env, planted, args...); r.code != 0 {
				t.Fatalf("the launch that plants %s failed:\n%s", c.prog, r)
			}
			r := run(t, p.dir, env, "", next...)
			if b, err := os.ReadFile(marker); err == nil {
				t.Fatalf("the next launch ran the %s the sandbox planted on its PATH, on the host: %s\n%s", c.prog, b, r)
			}
			if r.code != 125 || !strings.Contains(r.stderr, filepath.Join(venv, c.prog)) {
				t.Errorf("the next launch did not refuse the planted %s by its path (exit %d, want 125):\n%s", c.prog, r.code, r)
			}
			if c.prog != "bwrap" {
				return
			}
			if good == nil {
				t.Fatalf("the first launch left records %v, want one", recs)
			}
			// The early start runs the record's bubblewrap before anything is
			// compared: a record naming the planted one, PATH's bwrap now, must not
			// run it either.
			var rec map[string]any
			if err := json.Unmarshal(good, &rec); err != nil {
				t.Fatal(err)
			}
			rec["Bwrap"] = filepath.Join(venv, "bwrap")
			forged, err := json.Marshal(rec)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(recs[0], forged, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chown(recs[0], it.uid, it.gid); err != nil {
				t.Fatal(err)
			}
			r = run(t, p.dir, env, "", next...)
			if b, err := os.ReadFile(marker); err == nil {
				t.Fatalf("the early start ran the planted bwrap a record named, on the host: %s\n%s", b, r)
			}
			if r.code != 125 {
				t.Errorf("the launch with a record naming the planted bwrap exited %d, want 125:\n%s", r.code, r)
			}
			if left := leftovers(t, state); len(left) > 0 {
				t.Errorf("left behind: %v", left)
			}
		})
	}
}

// TestDoctorRunsNoPlantedProgram: `devsandbox doctor` runs bubblewrap (its version, a
// trial sandbox, the mount table's cost) and pasta (the firewall probe) from PATH, on
// the host. Run in a project whose `.venv/bin` is first on PATH and holds a bwrap and
// a pasta the sandbox could have written, it must run neither, and say why on their
// rows.
func TestDoctorRunsNoPlantedProgram(t *testing.T) {
	requireBwrap(t)
	p := newProject(t)
	p.mkdir("outside")
	marker := filepath.Join(p.path("outside"), "ran")
	venv := filepath.Join(p.dir, ".venv", "bin")
	for _, prog := range []string{"bwrap", "pasta"} {
		real, err := exec.LookPath(prog)
		if err != nil {
			t.Skipf("%s not installed", prog)
		}
		p.write("proj/.venv/bin/"+prog, "#!/bin/sh\necho \"$0\" >> "+marker+"\nexec "+real+" \"$@\"\n")
		if err := os.Chmod(filepath.Join(venv, prog), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	env := []string{"PATH=" + venv + ":" + strings.TrimPrefix(hostPath("/usr/local/bin:/usr/bin:/bin"), "PATH=")}
	r := run(t, p.dir, env, "", "--isolator=bwrap", "doctor")
	if b, err := os.ReadFile(marker); err == nil {
		t.Fatalf("doctor ran the programs planted on its PATH, on the host: %s\n%s", b, r)
	}
	for _, prog := range []string{"bwrap", "pasta"} {
		if !strings.Contains(r.stdout, filepath.Join(venv, prog)+" (found on PATH), lies where this sandbox can write") {
			t.Errorf("doctor's output does not refuse the planted %s by its path:\n%s", prog, r)
		}
	}
}

// TestKrunStartsNoPlantedPodman: krun starts podman's API service from PATH, on the
// host, when none runs for its socket. A podman the sandbox could have written, in
// the project's `.venv/bin` first on PATH, must not be the one started: the run is
// refused, naming it, and nothing of it runs.
func TestKrunStartsNoPlantedPodman(t *testing.T) {
	requirePodman(t)
	sock := suiteServiceSocket()
	noIdleService(t, sock)
	real, err := exec.LookPath("podman")
	if err != nil {
		t.Fatal(err)
	}
	p := newProject(t)
	p.mkdir("outside")
	marker := filepath.Join(p.path("outside"), "ran")
	venv := filepath.Join(p.dir, ".venv", "bin")
	p.write("proj/.venv/bin/podman", "#!/bin/sh\necho \"$0 $*\" >> "+marker+"\nexec "+real+" \"$@\"\n")
	if err := os.Chmod(filepath.Join(venv, "podman"), 0o755); err != nil {
		t.Fatal(err)
	}
	env := []string{"PATH=" + venv + ":" + strings.TrimPrefix(hostPath("/usr/local/bin:/usr/bin:/bin"), "PATH=")}
	r := run(t, p.dir, env, "", "--isolator=krun", "--", "true")
	if b, err := os.ReadFile(marker); err == nil {
		t.Errorf("the run started the podman planted on its PATH, on the host: %s\n%s", b, r)
	}
	if r.code != 125 || !strings.Contains(r.stderr, filepath.Join(venv, "podman")) {
		t.Errorf("the run did not refuse the planted podman by its path (exit %d, want 125):\n%s", r.code, r)
	}
	requireServiceGone(t, sock, 25*time.Second)
}

// TestOtherProjectsProgramNotRun: a PATH entry in *another* project (project A's
// activated `.venv/bin` while devsandbox runs in project B) is a directory A's
// sandbox writes. B's plan does not bind it, so B's sandbox cannot write it, but a
// bwrap A's sandbox planted there would still run on the host, unsandboxed, at B's
// launch and B's doctor. Both must refuse it, naming it, and run nothing of it.
func TestOtherProjectsProgramNotRun(t *testing.T) {
	requireBwrap(t)
	real, err := exec.LookPath("bwrap")
	if err != nil {
		t.Fatal(err)
	}
	a := newProject(t)
	a.mkdir("outside")
	marker := filepath.Join(a.path("outside"), "ran")
	venv := filepath.Join(a.dir, ".venv", "bin")
	planted := "#!/bin/sh\necho \"$0\" >> " + marker + "\nexec " + real + " \"$@\"\n"
	// A's sandbox plants it (with PATH as usual: A's launch is not the one to judge).
	if r := run(t, a.dir, nil, planted, "--isolator=bwrap", "--egress=none", "--", "/bin/sh", "-c",
		"mkdir -p .venv/bin && cat > .venv/bin/bwrap && chmod 755 .venv/bin/bwrap"); r.code != 0 {
		t.Fatalf("the launch that plants bwrap in project A failed:\n%s", r)
	}
	// Project B, a sibling, with A's .venv/bin first on PATH.
	b := filepath.Join(a.root, "projb")
	a.mkdir("projb/.git/objects")
	a.mkdir("projb/.git/refs")
	a.write("projb/.git/HEAD", "ref: refs/heads/main\n")
	a.write("projb/.git/config", "[core]\n\trepositoryformatversion = 0\n")
	t.Cleanup(func() { a.forget(b) })
	env := []string{"DEVSANDBOX_EARLY_START=0", "PATH=" + venv + ":" + strings.TrimPrefix(hostPath("/usr/local/bin:/usr/bin:/bin"), "PATH=")}
	r := run(t, b, env, "", "--isolator=bwrap", "--egress=none", "--", "/bin/true")
	if got, err := os.ReadFile(marker); err == nil {
		t.Fatalf("project B's launch ran the bwrap project A's sandbox planted, on the host: %s\n%s", got, r)
	}
	if r.code != 125 || !strings.Contains(r.stderr, filepath.Join(venv, "bwrap")) || !strings.Contains(r.stderr, a.dir) {
		t.Errorf("project B's launch did not refuse project A's bwrap by its path and project (exit %d, want 125):\n%s", r.code, r)
	}
	r = run(t, b, env, "", "--isolator=bwrap", "doctor")
	if got, err := os.ReadFile(marker); err == nil {
		t.Fatalf("project B's doctor ran the bwrap project A's sandbox planted, on the host: %s\n%s", got, r)
	}
	if !strings.Contains(r.stdout, filepath.Join(venv, "bwrap")) {
		t.Errorf("doctor's output does not refuse project A's bwrap by its path:\n%s", r)
	}
}

// TestOtherProjectsBindsProgramNotRun: project A's sandbox writes more than project
// A: a directory its configuration binds read-write (here `--mount`, as `rw_binds`
// and read-write `host_mounts` do) outside every project. A bubblewrap its sandbox
// plants there, first on PATH for a launch in project B, must not run, nor by B's
// doctor; and after A's sandbox home and record are removed (`sandboxes rm`), what
// A's sandbox planted in A's own `.venv/bin` is refused all the same. Before, a
// directory A binds was known to A's plan alone, and a removed record took A with it:
// both planted programs ran on the host.
func TestOtherProjectsBindsProgramNotRun(t *testing.T) {
	requireBwrap(t)
	real, err := exec.LookPath("bwrap")
	if err != nil {
		t.Fatal(err)
	}
	a := newProject(t)
	a.mkdir("outside")
	a.mkdir("tools/bin")
	tools := a.path("tools/bin")
	marker := filepath.Join(a.path("outside"), "ran")
	venv := filepath.Join(a.dir, ".venv", "bin")
	planted := "#!/bin/sh\necho \"$0\" >> " + marker + "\nexec " + real + " \"$@\"\n"
	// A's sandbox plants bwrap in the bound directory and in its .venv/bin.
	if r := run(t, a.dir, nil, planted, "--isolator=bwrap", "--egress=none", "--mount", tools, "--", "/bin/sh", "-c",
		"cat > "+tools+"/bwrap && chmod 755 "+tools+"/bwrap && mkdir -p .venv/bin && cp "+tools+"/bwrap .venv/bin/bwrap"); r.code != 0 {
		t.Fatalf("the launch that plants bwrap through project A's read-write bind failed:\n%s", r)
	}
	b := filepath.Join(a.root, "projb")
	a.mkdir("projb/.git/objects")
	a.mkdir("projb/.git/refs")
	a.write("projb/.git/HEAD", "ref: refs/heads/main\n")
	a.write("projb/.git/config", "[core]\n\trepositoryformatversion = 0\n")
	t.Cleanup(func() { a.forget(b) })
	rest := strings.TrimPrefix(hostPath("/usr/local/bin:/usr/bin:/bin"), "PATH=")
	refused := func(dir, when string) {
		t.Helper()
		env := []string{"DEVSANDBOX_EARLY_START=0", "PATH=" + dir + ":" + rest}
		prog := filepath.Join(dir, "bwrap")
		r := run(t, b, env, "", "--isolator=bwrap", "--egress=none", "--", "/bin/true")
		if got, err := os.ReadFile(marker); err == nil {
			t.Fatalf("project B's launch %s ran the bwrap project A's sandbox planted, on the host: %s\n%s", when, got, r)
		}
		if r.code != 125 || !strings.Contains(r.stderr, prog) || !strings.Contains(r.stderr, a.dir) || !strings.Contains(r.stderr, "remove "+dir+" from PATH") {
			t.Errorf("project B's launch %s did not refuse %s naming it, project A and the fix (exit %d, want 125):\n%s", when, prog, r.code, r)
		}
		r = run(t, b, env, "", "--isolator=bwrap", "doctor")
		if got, err := os.ReadFile(marker); err == nil {
			t.Fatalf("project B's doctor %s ran the bwrap project A's sandbox planted, on the host: %s\n%s", when, got, r)
		}
		if !strings.Contains(r.stdout, prog) {
			t.Errorf("project B's doctor %s does not refuse %s:\n%s", when, prog, r)
		}
	}
	refused(tools, "with A's bound directory on PATH")
	if r := run(t, a.dir, nil, "", "sandboxes", "rm", a.name()); r.code != 0 {
		t.Fatalf("sandboxes rm %s:\n%s", a.name(), r)
	}
	refused(venv, "after A's sandbox was removed")
	refused(tools, "with A's bound directory on PATH, after A's sandbox was removed")
}

// TestKrunServiceFindsNoPlantedHelper: podman's API service, which devsandbox starts
// on the host, itself looks programs up on the PATH it was started with: the
// network helper of a container on its default network (slirp4netns, pasta),
// newuidmap/newgidmap, conmon and the OCI runtime when its configured paths hold
// none. With the project's `.venv/bin` first on the user's PATH (podman itself found
// in /usr/bin, which the sandbox cannot write), whatever the sandbox planted there
// under those names must not be what the service runs.
//
// The run gets a service of its own (an empty CONTAINERS_CONF_OVERRIDE keys another,
// suiteServiceSocket), which it starts with that PATH: the test need not wait for the
// suite's service to go first, and it ends its own once the run is over instead of
// waiting out the 10 s a service idles (ServiceIdle; TestKrunServiceFilesGo holds the
// service to that).
func TestKrunServiceFindsNoPlantedHelper(t *testing.T) {
	requirePodman(t)
	p := newProject(t)
	p.write("containers-override.conf", "")
	conf := "CONTAINERS_CONF_OVERRIDE=" + p.path("containers-override.conf")
	sock := suiteServiceSocket(conf)
	requireServiceGone(t, sock, 25*time.Second)
	t.Cleanup(func() { stopService(t, sock) })
	p.mkdir("outside")
	marker := filepath.Join(p.path("outside"), "ran")
	venv := filepath.Join(p.dir, ".venv", "bin")
	for _, prog := range []string{"slirp4netns", "pasta", "newuidmap", "newgidmap", "conmon", "runc", "crun", "krun", "catatonit", "netavark", "aardvark-dns"} {
		real, err := exec.LookPath(prog)
		if err != nil {
			real = "/bin/false"
		}
		p.write("proj/.venv/bin/"+prog, "#!/bin/sh\necho \"$0 $*\" >> "+marker+"\nexec "+real+" \"$@\"\n")
		if err := os.Chmod(filepath.Join(venv, prog), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	env := []string{"XDG_RUNTIME_DIR=" + runtimeDir(), conf, "PATH=" + venv + ":" + strings.TrimPrefix(hostPath("/usr/local/bin:/usr/bin:/bin"), "PATH=")}
	r := run(t, p.dir, env, "", "--isolator=krun", "--egress=open", "--", "true")
	if b, err := os.ReadFile(marker); err == nil {
		t.Errorf("podman's service ran programs planted on the PATH devsandbox was started with, on the host: %s\n%s", b, r)
	}
	if r.code != 0 {
		t.Errorf("the run failed (exit %d):\n%s", r.code, r)
	}
	if len(podmanServices(sock)) == 0 {
		t.Errorf("no podman service on %s: the run did not start a service of its own (the test computes the wrong socket)", sock)
	}
}

// stopService ends the podman service on sock (its supervisor and podman), which only
// the calling test uses, and removes the files its supervisor would have: what its
// idling out (ServiceIdle) does, without the wait.
func stopService(t *testing.T, sock string) {
	t.Helper()
	pids := podmanServices(sock)
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGTERM)
	}
	deadline := time.Now().Add(20 * time.Second)
	for len(podmanServices(sock)) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the podman service on %s %v outlived SIGTERM by 20s", sock, podmanServices(sock))
		}
		runtimeYield()
	}
	lockSum := sha256.Sum256([]byte(sock))
	for _, f := range []string{sock, sock + ".log", sock + ".users", sock + ".turn", filepath.Join(filepath.Dir(sock), "devsandbox-create-"+hex.EncodeToString(lockSum[:6])+".lock")} {
		if err := os.Remove(f); err != nil && !os.IsNotExist(err) {
			t.Errorf("removing the stopped service's %s: %v", f, err)
		}
	}
	requireServiceGone(t, sock, 5*time.Second)
}

// TestKrunDoctorStartsNoPlantedPodman: `devsandbox doctor` asks PATH's podman its
// version and (krun's Check) starts podman's service when none runs, with no plan
// of a run to judge PATH's podman against. A podman in a project's `.venv/bin` (a directory that project's sandbox
// writes) first on PATH must not be started.
func TestKrunDoctorStartsNoPlantedPodman(t *testing.T) {
	requirePodman(t)
	requireBwrap(t)
	sock := suiteServiceSocket()
	noIdleService(t, sock)
	real, err := exec.LookPath("podman")
	if err != nil {
		t.Fatal(err)
	}
	p := newProject(t)
	// One run in the project, as any use of devsandbox there: the project is known.
	if r := run(t, p.dir, nil, "", "--isolator=bwrap", "--egress=none", "--", "true"); r.code != 0 {
		t.Fatalf("the first run failed:\n%s", r)
	}
	p.mkdir("outside")
	marker := filepath.Join(p.path("outside"), "ran")
	venv := filepath.Join(p.dir, ".venv", "bin")
	p.write("proj/.venv/bin/podman", "#!/bin/sh\necho \"$0 $*\" >> "+marker+"\nexec "+real+" \"$@\"\n")
	if err := os.Chmod(filepath.Join(venv, "podman"), 0o755); err != nil {
		t.Fatal(err)
	}
	env := []string{"XDG_RUNTIME_DIR=" + runtimeDir(), "PATH=" + venv + ":" + strings.TrimPrefix(hostPath("/usr/local/bin:/usr/bin:/bin"), "PATH=")}
	r := run(t, p.dir, env, "", "--isolator=krun", "doctor")
	if b, err := os.ReadFile(marker); err == nil {
		t.Errorf("doctor ran the podman planted on its PATH, on the host: %s\n%s", b, r)
	}
	if !strings.Contains(r.stdout, filepath.Join(venv, "podman")) {
		t.Errorf("doctor does not refuse the planted podman by its path:\n%s", r)
	}
	requireServiceGone(t, sock, 25*time.Second)
}

// TestRelativePathEntryProgramNotRun: an empty PATH entry (a leading or doubled
// colon) or "." is the working directory, which for devsandbox is the project the
// sandbox writes. Go's lookup refuses such a result unless GODEBUG=execerrdot=0 is
// set; with it, the bwrap the sandbox planted at the project's top ran on the host.
// A relative result is refused whatever GODEBUG says.
func TestRelativePathEntryProgramNotRun(t *testing.T) {
	requireBwrap(t)
	real, err := exec.LookPath("bwrap")
	if err != nil {
		t.Fatal(err)
	}
	p := newProject(t)
	p.mkdir("outside")
	marker := filepath.Join(p.path("outside"), "ran")
	planted := "#!/bin/sh\necho \"$0\" >> " + marker + "\nexec " + real + " \"$@\"\n"
	if r := run(t, p.dir, nil, planted, "--isolator=bwrap", "--egress=none", "--", "/bin/sh", "-c", "cat > bwrap && chmod 755 bwrap"); r.code != 0 {
		t.Fatalf("the launch that plants bwrap failed:\n%s", r)
	}
	sys := strings.TrimPrefix(hostPath("/usr/local/bin:/usr/bin:/bin"), "PATH=")
	for _, env := range [][]string{
		{"PATH=:" + sys, "GODEBUG=execerrdot=0"},
		{"PATH=.:" + sys, "GODEBUG=execerrdot=0"},
		{"PATH=:" + sys},
	} {
		r := run(t, p.dir, env, "", "--isolator=bwrap", "--egress=none", "--", "/bin/true")
		if b, err := os.ReadFile(marker); err == nil {
			t.Fatalf("with %q the launch ran the bwrap the sandbox planted in the project, on the host: %s\n%s", env, b, r)
		}
		if r.code == 0 {
			t.Errorf("with %q the launch ran (exit 0), want a refusal:\n%s", env, r)
		}
	}
}
