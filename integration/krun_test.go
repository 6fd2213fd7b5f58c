//go:build integration

package integration

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/devsandbox/devsandbox/internal/procs"
	"github.com/devsandbox/devsandbox/isolator/krun"
	"github.com/devsandbox/devsandbox/isolator/runmark"
)

// podmanReady is why the krun tests cannot run ("" when they can).
var podmanReady = "not checked"

// krunImage is the image the krun runs use: docker's default image, loaded into the
// test user's podman storage.
var krunImage string

// recordDir is where the recording krun runtime (scripts/krun-recorder.sh, installed
// by the setup script) writes each container's argv and OCI config.
const recordDir = "/var/tmp/devsandbox-krun-record"

// setupPodman makes the krun isolator usable for the test user: the default image in
// its podman storage (from the docker engine, where setupDocker built it) and
// krun.runtime = "runc" in its user config, so the conformance suite runs through
// podman with runc. The runs' HOME is the throwaway one (setupHome): podman's
// configuration there is the test user's own (the recording krun runtime), with a
// storage.conf naming the user's podman storage, where the image is. Runs once, as
// root, after setupDocker.
func setupPodman() {
	if _, err := os.Stat(filepath.Join(filepath.Dir(it.bin), "devsandbox-krun")); err != nil {
		podmanReady = "devsandbox-krun was not built"
		return
	}
	if _, err := exec.LookPath("podman"); err != nil {
		podmanReady = "podman is not installed (scripts/setup-test-env.sh installs it)"
		return
	}
	if fi, err := os.Stat(runtimeDir()); err != nil || int(fi.Sys().(*syscall.Stat_t).Uid) != it.uid {
		podmanReady = runtimeDir() + " is missing or not the test user's (scripts/setup-test-env.sh makes it)"
		return
	}
	out, err := exec.Command(it.bin, "version").Output()
	if err != nil {
		podmanReady = fmt.Sprintf("devsandbox version: %v", err)
		return
	}
	krunImage = "devsandbox/default:" + strings.TrimPrefix(strings.TrimSpace(string(out)), "devsandbox ")
	if err := setupPodmanConfig(); err != nil {
		podmanReady = err.Error()
		return
	}
	recordPodmanImages()
	// Load it unless the user's storage has docker's image: a build of the same
	// version from another base (setupDocker rebuilds it) must replace it too.
	// docker save | podman load keeps the image's ID.
	stale := false
	if id, err := exec.Command("docker", "image", "inspect", "--format", "{{.Id}}", krunImage).Output(); err == nil {
		out, _ := podmanAs("image", "inspect", "--format", "{{.Id}}", krunImage) // may include warnings
		stale = !strings.HasSuffix(out, strings.TrimPrefix(strings.TrimSpace(string(id)), "sha256:"))
	}
	if _, err := podmanAs("image", "exists", krunImage); err != nil || stale {
		if engineReady[localDocker] != "" {
			podmanReady = "the default image is built with docker, which is not ready: " + engineReady[localDocker]
			return
		}
		// A name of its own: runs of other checkouts load their own versions at once.
		f, err := os.CreateTemp("", "devsandbox-it-image-*.tar")
		if err != nil {
			podmanReady = err.Error()
			return
		}
		tar := f.Name()
		f.Close()
		defer os.Remove(tar)
		if out, err := exec.Command("docker", "save", "-o", tar, krunImage).CombinedOutput(); err != nil {
			podmanReady = fmt.Sprintf("docker save %s: %v: %s", krunImage, err, out)
			return
		}
		_ = os.Chmod(tar, 0o644)
		if out, err := podmanAs("load", "-q", "-i", tar); err != nil {
			podmanReady = fmt.Sprintf("podman load %s: %v: %s", krunImage, err, out)
			return
		}
	}
	if err := writeUserConfig(suiteConfig + "[krun]\nruntime = \"runc\"\n"); err != nil {
		podmanReady = err.Error()
		return
	}
	podmanReady = ""
}

// setupPodmanConfig gives the throwaway home the test user's podman configuration
// (~/.config/containers: the recording krun runtime in containers.conf) and, as its
// storage.conf, one naming the storage the user's own podman uses (asked with the own
// home) as rootless_storage_path: runs and podmanAs find the image there, and the
// suite's podman services keep their storage where the user's are.
func setupPodmanConfig() error {
	out, err := podmanIn(it.realHome, "info", "--format", "{{.Store.GraphDriverName}} {{.Store.GraphRoot}}") // may include warnings
	driver, root, _ := strings.Cut(out[strings.LastIndex(out, "\n")+1:], " ")
	if err != nil || driver == "" || !filepath.IsAbs(root) {
		return fmt.Errorf("the test user's podman storage: podman info: %v: %s", err, out)
	}
	dir := filepath.Join(it.home, ".config", "containers")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	own := filepath.Join(it.realHome, ".config", "containers")
	entries, err := os.ReadDir(own)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	files := map[string][]byte{}
	for _, e := range entries {
		if e.Type().IsRegular() && e.Name() != "storage.conf" {
			if files[e.Name()], err = os.ReadFile(filepath.Join(own, e.Name())); err != nil {
				return err
			}
		}
	}
	files["storage.conf"] = fmt.Appendf(nil, "[storage]\ndriver = %q\nrootless_storage_path = %q\n", driver, root)
	for name, data := range files {
		f := filepath.Join(dir, name)
		if err := os.WriteFile(f, data, 0o644); err != nil {
			return err
		}
		if err := os.Lchown(f, it.uid, it.gid); err != nil {
			return err
		}
	}
	storageConf = filepath.Join(dir, "storage.conf")
	_ = os.Lchown(dir, it.uid, it.gid)
	return os.Lchown(filepath.Dir(dir), it.uid, it.gid)
}

// requirePodman skips without rootless podman and the image, and fails in CI.
func requirePodman(t *testing.T) {
	t.Helper()
	if podmanReady != "" {
		if os.Getenv("CI") != "" {
			t.Fatalf("podman is required in CI: %s", podmanReady)
		}
		t.Skip(podmanReady)
	}
}

func runtimeDir() string { return fmt.Sprintf("/run/user/%d", it.uid) }

// suiteServiceSocket is the socket of the podman service devsandbox runs for the
// suite's krun runs (runtime runc) with the podman variables extra (NAME=VALUE, in
// krun's podmanEnvNames order, all before XDG_CONFIG_HOME) besides baseEnv's. It is
// krun's serviceKey: the first 4 bytes of the SHA-256 of the podman variables that
// differ from the account's usual, NAME=VALUE joined by NUL; the throwaway home's
// XDG_CONFIG_HOME and XDG_DATA_HOME always do (it is not the test user's home), so
// each suite has a service of its own, which another suite on this machine neither
// keeps busy nor serves from its own home.
func suiteServiceSocket(extra ...string) string {
	set := append(slices.Clone(extra), "XDG_CONFIG_HOME="+filepath.Join(it.home, ".config"), "XDG_DATA_HOME="+filepath.Join(it.home, ".local/share"))
	sum := sha256.Sum256([]byte(strings.Join(set, "\x00")))
	return filepath.Join(runtimeDir(), "podman", "devsandbox-runc-"+hex.EncodeToString(sum[:4])+".sock")
}

// podmanAs runs the podman CLI as the test user in the throwaway home (the user's
// storage, no API service).
func podmanAs(args ...string) (string, error) {
	return podmanIn(it.home, args...)
}

// podmanIn runs the podman CLI as the test user with HOME=home.
func podmanIn(home string, args ...string) (string, error) {
	cmd := exec.Command("podman", args...)
	cmd.Dir = "/"
	cmd.Env = []string{"HOME=" + home, "USER=" + it.name, "PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin", "XDG_RUNTIME_DIR=" + runtimeDir()}
	if it.asOther {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(it.uid), Gid: uint32(it.gid)}}
	}
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

func mustPodman(t *testing.T, args ...string) string {
	t.Helper()
	out, err := podmanAs(args...)
	if err != nil {
		t.Fatalf("podman %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return out
}

// krunContainers lists the ids of the project's podman containers.
func krunContainers(t *testing.T, p *project, all bool) []string {
	t.Helper()
	id := strings.TrimPrefix(p.name(), filepath.Base(p.dir)+"-")
	args := []string{"ps", "-q", "--no-trunc", "--filter", "label=dev.devsandbox.project=" + id}
	if all {
		args = append(args, "-a")
	}
	return strings.Fields(mustPodman(t, args...))
}

// krunContainerPids returns the processes in the container's pid namespace.
func krunContainerPids(t *testing.T, id string) []int {
	t.Helper()
	pid, err := strconv.Atoi(mustPodman(t, "inspect", "--format", "{{.State.Pid}}", id))
	if err != nil || pid == 0 {
		return nil
	}
	return pidNamespaceMembers(pid)
}

// podmanServices lists the test user's podman API services on sock that devsandbox started,
// and their supervisors.
func podmanServices(sock string) []int {
	var pids []int
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		b, err := os.ReadFile(d + "/cmdline")
		if err != nil {
			continue
		}
		args := strings.Split(string(b), "\x00")
		cmd := strings.Join(args, " ")
		var st syscall.Stat_t
		if syscall.Stat(d, &st) != nil || int(st.Uid) != it.uid {
			continue
		}
		// Only those of sock: other runs on this machine have services of their own
		// (another storage configuration is another socket), which end on their own time.
		if !slices.Contains(args, sock) && !slices.Contains(args, "unix://"+sock) {
			continue
		}
		if strings.Contains(cmd, "system service") || strings.Contains(cmd, "devsandbox-krun supervise") {
			if n, err := strconv.Atoi(filepath.Base(d)); err == nil {
				pids = append(pids, n)
			}
		}
	}
	return pids
}

// record is what the recording krun runtime saw for one container.
type record struct {
	argv   []string
	config ociConfig
	raw    string
}

type ociConfig struct {
	Annotations map[string]string `json:"annotations"`
	Process     struct {
		Args    []string `json:"args"`
		Env     []string `json:"env"`
		User    struct{ UID, GID int }
		Rlimits []struct {
			Type       string `json:"type"`
			Hard, Soft uint64
		} `json:"rlimits"`
	} `json:"process"`
	Mounts []struct {
		Destination string   `json:"destination"`
		Type        string   `json:"type"`
		Source      string   `json:"source"`
		Options     []string `json:"options"`
	} `json:"mounts"`
	Linux struct {
		Devices []struct {
			Path string `json:"path"`
		} `json:"devices"`
	} `json:"linux"`
}

// recordFor finds the record of the run in project dir (its bind is in the mounts).
func recordFor(t *testing.T, dir string) record {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(recordDir, "*.json"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		var c ociConfig
		if json.Unmarshal(b, &c) != nil {
			continue
		}
		for _, m := range c.Mounts {
			if m.Destination == dir && m.Type == "bind" {
				argv, _ := os.ReadFile(strings.TrimSuffix(f, ".json") + ".argv")
				return record{argv: strings.Split(strings.TrimSpace(string(argv)), "\n"), config: c, raw: string(b) + string(argv)}
			}
		}
	}
	t.Fatalf("the krun runtime recorded no container for %s (is scripts/krun-recorder.sh registered? see scripts/setup-test-env.sh)", dir)
	return record{}
}

// (b) Through the runtime named krun (a recorder delegating to runc): podman picks the
// runtime, the VM's size reaches it the ways crun and youki read it, /dev/kvm is
// passed, the mounts are the Plan's, and no secret value is in its argv or config.
func TestKrunRuntimeSeesTheVM(t *testing.T) {
	requirePodman(t)
	requireKVMDevice(t)
	if _, err := os.Stat(recordDir); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("the recording krun runtime is not set up: %v", err)
		}
		t.Skip("the recording krun runtime is not set up (scripts/setup-test-env.sh)")
	}
	p := newProject(t)
	const value = "krun-s3cret-7171"
	p.write("proj/.env", "DB=hunter2\n")
	p.write("secret.txt", "file-"+value)
	p.write("krun.toml", "[krun]\nruntime = \"krun\"\ncpus = 3\nmemory_mib = 1536\n")
	r := run(t, p.dir, []string{"API_TOKEN=" + value}, "", "--isolator=krun", "--config", p.path("krun.toml"),
		"-e", "API_TOKEN", "--secret-file", "DB_PASS="+p.path("secret.txt"), "--", "/bin/sh", "-c",
		`echo "env:$API_TOKEN"; cat /run/secrets/DB_PASS; echo; cat /.krun_vm.json; wc -c < .env`)
	want := "env:" + value + "\nfile-" + value + "\n{\"cpus\":3,\"ram_mib\":1536}\n0\n"
	if r.code != 0 || r.stdout != want {
		t.Fatalf("run through the krun runtime:\n%s\nwant stdout %q", r, want)
	}
	rec := recordFor(t, p.dir)
	if len(rec.argv) == 0 || !contains(rec.argv, "create") {
		t.Errorf("the krun runtime was not asked to create the container: %q", rec.argv)
	}
	a := rec.config.Annotations
	if a["run.oci.handler"] != "krun" || a["krun.cpus"] != "3" || a["krun.ram_mib"] != "1536" {
		t.Errorf("annotations: %v", a)
	}
	// Rootless podman binds devices rather than listing them for mknod.
	hasKVM := false
	for _, d := range rec.config.Linux.Devices {
		hasKVM = hasKVM || d.Path == "/dev/kvm"
	}
	for _, m := range rec.config.Mounts {
		hasKVM = hasKVM || m.Destination == "/dev/kvm" && m.Source == "/dev/kvm"
	}
	if !hasKVM {
		t.Errorf("/dev/kvm is neither a device nor a bind: %+v", rec.config.Linux.Devices)
	}
	if u := rec.config.Process.User; u.UID != it.uid || u.GID != it.gid {
		t.Errorf("process user %+v, want %d:%d", u, it.uid, it.gid)
	}
	if args := rec.config.Process.Args; len(args) < 5 || args[0] != "/run/devsandbox/init" || args[1] != "--container" {
		t.Errorf("process args %q", args)
	}
	mounts := map[string]string{}
	for _, m := range rec.config.Mounts {
		mounts[m.Destination] = m.Type + " " + m.Source + " " + strings.Join(m.Options, ",")
	}
	for dst, want := range map[string]string{
		p.dir:                  "bind " + p.dir + " ",
		p.dir + "/.env":        "bind " + filepath.Join(it.home, ".local/state/devsandbox/empty") + " ",
		"/.krun_vm.json":       "bind ",
		"/run/secrets":         "tmpfs tmpfs ",
		"/run/devsandbox/init": "bind ",
		"/home/" + it.name:     "bind " + filepath.Join(it.home, ".local/share/devsandbox", p.name(), "home") + " ",
	} {
		if !strings.HasPrefix(mounts[dst], want) {
			t.Errorf("mount %s = %q, want prefix %q", dst, mounts[dst], want)
		}
	}
	if !strings.Contains(mounts[p.dir+"/.env"], "ro") || !strings.Contains(mounts["/run/devsandbox/init"], "ro") {
		t.Errorf("masks and the init must be read-only: %q, %q", mounts[p.dir+"/.env"], mounts["/run/devsandbox/init"])
	}
	var hardNofile syscall.Rlimit
	_ = syscall.Getrlimit(syscall.RLIMIT_NOFILE, &hardNofile)
	for _, rl := range rec.config.Process.Rlimits {
		if rl.Type == "RLIMIT_NOFILE" && rl.Hard > hardNofile.Max {
			t.Errorf("RLIMIT_NOFILE %d above the host's hard limit %d", rl.Hard, hardNofile.Max)
		}
	}
	if strings.Contains(rec.raw, value) {
		t.Errorf("the secret value reached the runtime's argv or OCI config")
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// startMarkedKrunRun starts a krun run of p that waits until it is killed, with a
// marker (mark, NAME=VALUE) in its processes' environment, and returns once its
// command runs and its one container exists.
func startMarkedKrunRun(t *testing.T, p *project) (cmd *exec.Cmd, mark string) {
	t.Helper()
	mark = "DSB_IT_RUN=" + randHex(8)
	cmd = command(t.Context(), p.dir, baseEnv(mark), "--isolator=krun", "--", "/bin/sh", "-c", `sleep 1000 & echo ready; wait`)
	startLines(t, cmd).waitFor("ready")
	if ids := krunContainers(t, p, true); len(ids) != 1 {
		t.Fatalf("want the run's container, have %v", ids)
	}
	return cmd, mark
}

// (c) kill -9 of devsandbox leaves nothing of its session: no container, no pod, no
// process, and no podman service once no other session uses it. The service is the
// one devsandbox runs for the suite's environment (suiteServiceSocket: the throwaway
// home makes it the suite's own, so another suite on this machine never keeps it
// busy); this run's processes are told apart by a marker in their environment.
func TestKrunKill9LeavesNothing(t *testing.T) {
	requirePodman(t)
	p := newProject(t)
	cmd, mark := startMarkedKrunRun(t, p)
	sock := suiteServiceSocket()
	if len(podmanServices(sock)) == 0 {
		t.Fatalf("no podman service of devsandbox's on %s found while it runs", sock)
	}
	requireMarkedHelper(t, mark)
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	requireSessionGone(t, p, mark, sock)
	// No other session uses the service: its supervisor ends it 10 s after the last.
	requireServiceGone(t, sock, 25*time.Second)
}

// (c2) Two sessions of one user overlap on one podman service: kill -9 of one removes
// its own container and processes, and neither stops the service nor touches the
// other session, which goes on talking to its command and ends normally; the service
// ends after the last of them.
func TestKrunKill9SparesOtherSession(t *testing.T) {
	requirePodman(t)
	q := newProject(t)
	other := command(t.Context(), q.dir, baseEnv(), "--isolator=krun", "--", "/bin/sh", "-c", `echo ready; read x; echo "got $x"`)
	in, err := other.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var otherErr strings.Builder
	other.Stderr = &otherErr
	lines := startLines(t, other)
	lines.waitFor("ready")
	t.Cleanup(func() { _ = other.Process.Kill(); _ = other.Wait() })
	p := newProject(t)
	cmd, mark := startMarkedKrunRun(t, p)
	sock := suiteServiceSocket()
	before := podmanServices(sock)
	if len(before) == 0 {
		t.Fatalf("no podman service of devsandbox's on %s found while both run", sock)
	}
	requireMarkedHelper(t, mark)
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	requireSessionGone(t, p, mark, sock)
	if after := podmanServices(sock); !slices.Equal(after, before) {
		t.Errorf("the podman service (and its supervisor) %v changed to %v when the other session was killed", before, after)
	}
	if ids := krunContainers(t, q, false); len(ids) != 1 {
		t.Errorf("the other session's running container: have %v, want one", ids)
	}
	if _, err := io.WriteString(in, "on\n"); err != nil {
		t.Fatal(err)
	}
	lines.waitFor("got on")
	_ = in.Close()
	if err := other.Wait(); err != nil {
		t.Fatalf("the other session, after the kill of the first: %v\n%s", err, otherErr.String())
	}
	if ids := krunContainers(t, q, true); len(ids) != 0 {
		t.Errorf("the other session's container outlived it: %v", ids)
	}
	requireServiceGone(t, sock, 25*time.Second)
}

// A podman service serves only runs whose podman would use its storage and
// configuration: a run of the same account with another HOME (a second test suite's
// throwaway home, an embedder's home), where podman reads another containers.conf and
// storage.conf, gets a service of its own, started with that HOME, never the one a
// session of the first HOME keeps running (which would read the first home's
// configuration, and write in that home after it is gone).
func TestKrunServicePerHome(t *testing.T) {
	requirePodman(t)
	// Most of this test is the 10 s its own service outlives its last user
	// (ServiceIdle), as TestKrunServiceFilesGo's: the two run side by side, after the
	// suite's other tests (top-level parallel tests run last, -parallel at a time).
	// Neither waits for the suite's service to end (the kill -9 tests do, and they
	// run before), and each keys a service of its own by its podman variables.
	t.Parallel()
	p := newProject(t)
	cmd, _ := startMarkedKrunRun(t, p)
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	// The second home: the suite's podman configuration (its storage), and krun's
	// runtime with the containers' home at this home's path.
	other := p.path("home2")
	for _, f := range []string{".config/containers/storage.conf", ".config/containers/containers.conf"} {
		b, err := os.ReadFile(filepath.Join(it.home, f))
		if err != nil {
			t.Fatal(err)
		}
		p.write(filepath.Join("home2", f), string(b))
	}
	p.write("home2/.config/devsandbox/config.toml", fmt.Sprintf("[docker]\nhome = %q\n[krun]\nruntime = \"runc\"\n", other))
	env := append([]string{"HOME=" + other}, xdgEnv(other)...)
	// What the run keeps for the project under the second home goes as a user would
	// remove it: its state there records its socket directory, which is in the
	// temporary directory (the state path is too long for sockets).
	t.Cleanup(func() {
		if r := run(t, p.dir, env, "", "sandboxes", "rm", p.name()); r.code != 0 {
			t.Errorf("sandboxes rm under the second home:\n%s", r)
		}
	})
	r := run(t, p.dir, env, "", "--isolator=krun", "--", "true")
	if r.code != 0 {
		t.Fatalf("the run with HOME=%s:\n%s", other, r)
	}
	sum := sha256.Sum256([]byte("XDG_CONFIG_HOME=" + filepath.Join(other, ".config") + "\x00XDG_DATA_HOME=" + filepath.Join(other, ".local/share")))
	own := filepath.Join(runtimeDir(), "podman", "devsandbox-runc-"+hex.EncodeToString(sum[:4])+".sock")
	services := podmanServices(own)
	if len(services) == 0 {
		t.Fatalf("the run with HOME=%s started no service of its own on %s; the services of the test user's devsandbox are %v", other, own, serviceHomes())
	}
	for _, pid := range services {
		if h := processHome(pid); h != other {
			t.Errorf("the service of the run with HOME=%s (pid %d %s) has HOME=%s", other, pid, program(pid), h)
		}
	}
	sock := suiteServiceSocket()
	suite := podmanServices(sock)
	if len(suite) == 0 {
		t.Errorf("no podman service on %s (the suite's) while a run holds it", sock)
	}
	for _, pid := range suite {
		if h := processHome(pid); h != it.home {
			t.Errorf("the suite's service (pid %d %s) has HOME=%s", pid, program(pid), h)
		}
	}
	// The run that holds the suite's service has served: it ends now, not at the
	// cleanup, so that the suite's service idles out while this test waits for its
	// own (the suite's end waits for the suite's services, endSuiteServices).
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	requireServiceGone(t, own, 25*time.Second)
}

// processHome is the HOME in the environment pid started with.
func processHome(pid int) string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	for _, kv := range strings.Split(string(b), "\x00") {
		if h, ok := strings.CutPrefix(kv, "HOME="); ok {
			return h
		}
	}
	return ""
}

// serviceHomes describes the test user's podman services devsandbox started: their
// sockets' supervisors and their HOME, for a failure message.
func serviceHomes() []string {
	var out []string
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		b, err := os.ReadFile(d + "/cmdline")
		if args := strings.Split(string(b), "\x00"); err == nil && len(args) > 2 && filepath.Base(args[0]) == "devsandbox-krun" && args[1] == "supervise" {
			if n, err := strconv.Atoi(filepath.Base(d)); err == nil {
				out = append(out, fmt.Sprintf("%s (HOME=%s)", args[2], processHome(n)))
			}
		}
	}
	return out
}

// requireMarkedHelper fails unless the run's helper (devsandbox-krun, which holds the
// service's users lock) carries the run's marker: else a helper left behind would go
// unseen.
func requireMarkedHelper(t *testing.T, mark string) {
	t.Helper()
	for _, pid := range markedProcesses(mark) {
		if program(pid) == "devsandbox-krun" {
			return
		}
	}
	t.Fatal("the run's devsandbox-krun does not carry its marker: the test would prove nothing")
}

// requireSessionGone waits up to 10 s for the killed session of project p (its
// processes carry mark) to be gone: its containers, its pods, and its processes but
// the podman service on sock and its supervisor (which inherit the marker when the
// session started them).
func requireSessionGone(t *testing.T, p *project, mark, sock string) {
	t.Helper()
	id := strings.TrimPrefix(p.name(), filepath.Base(p.dir)+"-")
	deadline := time.Now().Add(10 * time.Second)
	for {
		containers := krunContainers(t, p, true)
		pods := strings.Fields(mustPodman(t, "pod", "ls", "-q", "--no-trunc", "--filter", "label=dev.devsandbox.project="+id))
		services := podmanServices(sock)
		var left []string
		for _, pid := range markedProcesses(mark) {
			if !slices.Contains(services, pid) {
				left = append(left, fmt.Sprintf("%d %s", pid, program(pid)))
			}
		}
		if len(containers)+len(pods)+len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the killed session outlived devsandbox by 10s: containers %v, pods %v, processes %v", containers, pods, left)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// noIdleService makes sure no podman service runs on sock as a test starts that needs
// its runs to start one: one an earlier test's runs left idling (the supervisor ends
// it 10 s after its last user, ServiceIdle) is stopped rather than waited out; one a
// devsandbox still uses is a session an earlier test left, reported as
// requireServiceGone does.
func noIdleService(t *testing.T, sock string) {
	t.Helper()
	if serviceInUse(t, sock) {
		requireServiceGone(t, sock, 25*time.Second)
		return
	}
	stopService(t, sock)
}

// requireServiceGone waits up to d for the podman service on sock and its supervisor
// to end and its files to go, which its supervisor does 10 s after its last user
// (ServiceIdle); a user holding the service's users lock then is reported as such.
func requireServiceGone(t *testing.T, sock string, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		services := podmanServices(sock)
		var files []string
		for _, f := range []string{sock, sock + ".log", sock + ".users", sock + ".turn"} {
			if _, err := os.Lstat(f); err == nil {
				files = append(files, filepath.Base(f))
			}
		}
		if len(services)+len(files) == 0 {
			return
		}
		if time.Now().After(deadline) {
			if serviceInUse(t, sock) {
				t.Fatalf("the podman service on %s %v still serves a devsandbox %v after the last session of this test ended", sock, services, d)
			}
			t.Fatalf("the podman service on %s %v (files %v) outlived its last user by %v", sock, services, files, d)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// (c') kill -9 of devsandbox-krun itself (not of devsandbox: its helper winds down when
// devsandbox goes) leaves the run's container, exited; the next krun run, of another
// project, removes it: the dead run's mark is no longer held.
func TestKrunHelperKill9LeftoverRemovedByNextRun(t *testing.T) {
	requirePodman(t)
	p := newProject(t)
	cmd, mark := startMarkedKrunRun(t, p)
	// The run's mark (package runmark), which its helper holds locked: once the helper
	// is dead, any krun run's start removes the container, another suite's on this
	// machine too. The test takes the lock as the helper's death frees it (blocked in
	// flock from before the kill), so the container is left for its own next run.
	ids := krunContainers(t, p, true)
	markPath := mustPodman(t, "inspect", "--format", `{{index .Config.Labels "dev.devsandbox.runmark"}}`, ids[0])
	markFile, err := os.Open(markPath)
	if err != nil {
		t.Fatalf("the run's mark %q: %v", markPath, err)
	}
	defer markFile.Close()
	held := make(chan error, 1)
	go func() { held <- unix.Flock(int(markFile.Fd()), unix.LOCK_EX) }()
	killed := 0
	for _, pid := range markedProcesses(mark) {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if args := strings.Split(string(b), "\x00"); program(pid) == "devsandbox-krun" && len(args) > 1 && args[1] == "serve" {
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			killed++
		}
	}
	if killed != 1 {
		t.Fatalf("killed %d devsandbox-krun serving the run, want 1", killed)
	}
	_ = cmd.Wait()
	select {
	case err := <-held:
		if err != nil {
			t.Fatalf("locking the dead run's mark: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the run's mark was still locked 10 s after its helper was killed")
	}
	left := krunContainers(t, p, true)
	if len(left) != 1 {
		t.Fatalf("the killed helper's container: have %v, want it left (else this test proves nothing)", left)
	}
	_ = unix.Flock(int(markFile.Fd()), unix.LOCK_UN)
	// Another project's run: it finds the leftover and removes it.
	q := newProject(t)
	if r := run(t, q.dir, nil, "", "--isolator=krun", "--", "true"); r.code != 0 {
		t.Fatalf("the second run:\n%s", r)
	}
	if left := krunContainers(t, p, true); len(left) != 0 {
		t.Errorf("the killed run's container %v outlived the next krun run", left)
	}
}

// The files devsandbox keeps per podman service (SOCK.log, SOCK.users, the creations'
// lock) go with the service: its supervisor removes them when it ends the idle service,
// and a service's start removes those of services that are gone.
func TestKrunServiceFilesGo(t *testing.T) {
	requirePodman(t)
	t.Parallel() // beside TestKrunServicePerHome, which says why
	p := newProject(t)
	dir := filepath.Join(runtimeDir(), "podman")
	// A service of its own: devsandbox keys the service by the podman variables set
	// (suiteServiceSocket).
	conf := p.path("containers-override.conf")
	p.write("containers-override.conf", "")
	env := "CONTAINERS_CONF_OVERRIDE=" + conf
	sock := suiteServiceSocket(env)
	lockSum := sha256.Sum256([]byte(sock))
	set := []string{sock, sock + ".log", sock + ".users", filepath.Join(dir, "devsandbox-create-"+hex.EncodeToString(lockSum[:6])+".lock")}
	// A set of a service that is gone (its supervisor was killed), the test user's.
	dead := filepath.Join(dir, "devsandbox-runc-it"+randHex(3)+".sock")
	deadSet := []string{dead + ".log", dead + ".users"}
	for _, f := range deadSet {
		if err := os.WriteFile(f, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(f, it.uid, it.gid); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		for _, f := range deadSet {
			_ = os.Remove(f)
		}
	})
	r := run(t, p.dir, []string{"XDG_RUNTIME_DIR=" + runtimeDir(), env}, "", "--isolator=krun", "--", "true")
	if r.code != 0 {
		t.Fatalf("the run: %s", r)
	}
	for _, f := range deadSet {
		if _, err := os.Lstat(f); err == nil {
			t.Errorf("%s of a service that is gone outlived the start of another", f)
		}
	}
	if _, err := os.Lstat(sock + ".users"); err != nil {
		t.Fatalf("the run's service has no users lock at %s (the test computes the wrong socket): %v", sock+".users", err)
	}
	// Its supervisor ends the service 10 s after its last user, and its files with it.
	deadline := time.Now().Add(30 * time.Second)
	for {
		var left []string
		for _, f := range set {
			if _, err := os.Lstat(f); err == nil {
				left = append(left, filepath.Base(f))
			}
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the files %v outlived their service by 20s", left)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// markedProcesses lists the test user's processes with mark in their environment.
func markedProcesses(mark string) []int {
	var pids []int
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		var st syscall.Stat_t
		if syscall.Stat(d, &st) != nil || int(st.Uid) != it.uid {
			continue
		}
		b, err := os.ReadFile(d + "/environ")
		if err != nil || !slices.Contains(strings.Split(string(b), "\x00"), mark) {
			continue
		}
		if n, err := strconv.Atoi(filepath.Base(d)); err == nil {
			pids = append(pids, n)
		}
	}
	return pids
}

// endSuiteServices waits, before the throwaway home goes, for the podman services
// devsandbox started for the suite's runs (those whose HOME is the throwaway home) and
// their supervisors to end, as they do 10 s after their last run, so none writes in
// the home once it is removed; one still there after 20 s is killed (its supervisor:
// the service dies with it) and reported. Other suites' services are not the suite's
// to end.
func endSuiteServices() {
	deadline := time.Now().Add(20 * time.Second)
	for {
		pids := procs.OfUserWithEnv(it.uid, "HOME="+it.home, "system service", "devsandbox-krun supervise")
		if len(pids) == 0 {
			return
		}
		if time.Now().After(deadline) {
			fmt.Fprintf(os.Stderr, "integration: the suite's podman services %v outlived its last run by 20s: killing them\n", pids)
			for _, pid := range pids {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
			return
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// serviceInUse reports whether a devsandbox holds the podman service on sock: each
// holds a shared lock on SOCKET.users while it runs, which the service's supervisor
// waits to find free.
func serviceInUse(t *testing.T, sock string) bool {
	t.Helper()
	f, err := os.Open(sock + ".users")
	if err != nil {
		return false
	}
	defer f.Close()
	// A moment's exclusive lock: the supervisor also takes one, briefly, to look.
	for range 5 {
		if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err == nil {
			_ = unix.Flock(int(f.Fd()), unix.LOCK_UN)
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
	return true
}

// A krun VM runs one command and cannot be exec'd into: --keep-container is refused
// with the reason; --dry-run prints the podman command with names only.
func TestKrunRefusalsAndDryRun(t *testing.T) {
	requirePodman(t)
	p := newProject(t)
	r := run(t, p.dir, nil, "", "--isolator=krun", "--keep-container", "--", "true")
	if r.code != 125 || !strings.Contains(r.stderr, "cannot be exec'd into") {
		t.Errorf("--keep-container:\n%s", r)
	}
	const value = "dry-s3cret-99"
	r = run(t, p.dir, []string{"API_TOKEN=" + value}, "", "--isolator=krun", "-e", "API_TOKEN", "--dry-run", "--", "true")
	if r.code != 0 || !strings.Contains(r.stdout, "podman run --rm -i") || !strings.Contains(r.stdout, "--runtime runc") ||
		!strings.Contains(r.stdout, "-e API_TOKEN") || strings.Contains(r.stdout, value) {
		t.Errorf("--dry-run:\n%s", r)
	}
	if len(krunContainers(t, p, true)) != 0 {
		t.Error("--dry-run created a container")
	}
	// The printed line runs as is, with the podman CLI.
	r = run(t, p.dir, nil, "", "--isolator=krun", "--egress=none", "--dry-run", "--", "/bin/sh", "-c", "echo dry-ran; id -u")
	p.write("dry.sh", r.stdout)
	cmd := exec.Command("/bin/sh", p.path("dry.sh"))
	cmd.Dir = p.dir
	cmd.Env = baseEnv("XDG_RUNTIME_DIR=" + runtimeDir())
	if it.asOther {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(it.uid), Gid: uint32(it.gid)}}
	}
	out, err := cmd.CombinedOutput()
	if err != nil || string(out) != fmt.Sprintf("dry-ran\n%d\n", it.uid) {
		t.Errorf("the --dry-run script: %v\n%s\n%s", err, out, r.stdout)
	}
	// The script made the mount points in the sandbox home as the user, as a run
	// does: the runtime (your first subordinate uid) made none there.
	home := filepath.Join(it.home, ".local/share/devsandbox", p.name(), "home")
	var foreign []string
	_ = filepath.WalkDir(home, func(path string, d os.DirEntry, err error) error {
		var st syscall.Stat_t
		if err == nil && syscall.Lstat(path, &st) == nil && int(st.Uid) != it.uid {
			foreign = append(foreign, fmt.Sprintf("%s (uid %d)", path, st.Uid))
		}
		return nil
	})
	if len(foreign) > 0 {
		t.Errorf("entries in the sandbox home that are not the user's after the --dry-run script: %v\n%s", foreign, r.stdout)
	}
}

// requireKVMDevice skips where the machine has no /dev/kvm: podman binds the device
// into a microVM container and cannot create one without it (the one other skip the
// suite allows; TestKrunNoKVMDevice checks the refusal such a machine gives).
func requireKVMDevice(t *testing.T) {
	t.Helper()
	if _, err := os.Stat("/dev/kvm"); err != nil {
		t.Skipf("this machine has no KVM device (%v): a microVM runtime cannot be given /dev/kvm here; TestKrunNoKVMDevice checks the refusal a user sees", err)
	}
}

// Without a /dev/kvm the user can open, a microVM runtime is refused by devsandbox
// itself, with the cause and the fix, before podman creates anything (the runtime
// records nothing). On a machine with the device (this one and CI's), the run's own
// mount namespace has a file the test user cannot open bound over it, so the refusal
// is checked on every machine, not only on one without KVM: it starts no podman
// service (it comes before any), so nothing of that namespace outlives the run.
func TestKrunNoKVMDevice(t *testing.T) {
	requirePodman(t)
	p := newProject(t)
	p.write("krun.toml", "[krun]\nruntime = \"krun\"\n")
	marker := p.path("proj/started")
	args := []string{"--isolator=krun", "--config", p.path("krun.toml"), "--", "/bin/sh", "-c", "touch " + marker}
	var r result
	if _, err := os.Stat("/dev/kvm"); err == nil {
		shut := filepath.Join(t.TempDir(), "kvm")
		if err := os.WriteFile(shut, nil, 0); err != nil {
			t.Fatal(err)
		}
		r = inMountNS(t, p.dir, map[string]string{"/dev/kvm": shut}, args...)
	} else {
		r = run(t, p.dir, nil, "", args...)
	}
	if r.code != 125 || !strings.Contains(r.stderr, `krun.runtime "krun" boots a microVM, which needs /dev/kvm`) ||
		!strings.Contains(r.stderr, `set krun.runtime = "runc"`) || strings.Contains(r.stderr, "podman refused") {
		t.Fatalf("a microVM runtime without /dev/kvm:\n%s", r)
	}
	if _, err := os.Stat(marker); !os.IsNotExist(err) {
		t.Fatalf("the command ran: %v", err)
	}
	if ids := krunContainers(t, p, true); len(ids) != 0 {
		t.Errorf("a container was created: %v", ids)
	}
}

// doctor explains the krun requirements row by row.
func TestKrunDoctor(t *testing.T) {
	requirePodman(t)
	p := newProject(t)
	r := run(t, p.dir, []string{"XDG_RUNTIME_DIR=" + runtimeDir()}, "", "doctor")
	for _, row := range []string{"podman ", "uidmap ", "/etc/subuid ", "/etc/subgid ", "runtime dir " + runtimeDir(), "krun runtime ", "podman limits ", "podman API socket ", "podman service limits ", "krun image ", "krun isolator "} {
		if !strings.Contains(r.stdout, "\n"+row) {
			t.Errorf("doctor has no %q row:\n%s", row, r)
		}
	}
	if !strings.Contains(r.stdout, "krun isolator     active") && !strings.Contains(r.stdout, "krun isolator  active") {
		for _, l := range strings.Split(r.stdout, "\n") {
			if strings.HasPrefix(l, "krun isolator") && !strings.Contains(l, "active") {
				t.Errorf("krun isolator not active: %s", l)
			}
		}
	}
}

// The real microVM: only where a runtime with libkrun is installed (crun built with
// libkrun, or krun on PATH that is not the test recorder) and /dev/kvm opens. Run it
// with DEVSANDBOX_IT_KRUN_RUNTIME=crun (or krun) on such a machine; see docs/isolators.md.
func TestKrunMicroVM(t *testing.T) {
	requirePodman(t)
	rt := os.Getenv("DEVSANDBOX_IT_KRUN_RUNTIME")
	if rt == "" {
		rt = libkrunRuntime()
	}
	if rt == "" {
		t.Skip("no libkrun runtime on this machine (crun without +LIBKRUN, no krun): the microVM test is the one skip allowed; see docs/isolators.md to run it")
	}
	p := newProject(t)
	p.write("krun.toml", fmt.Sprintf("[krun]\nruntime = %q\ncpus = 1\nmemory_mib = 512\n", rt))
	p.write("proj/.env", "DB=hunter2\n")
	r := run(t, p.dir, nil, "", "--isolator=krun", "--config", p.path("krun.toml"), "--", "/bin/sh", "-c",
		`uname -r; nproc; wc -c < .env; echo x > probe && cat probe`)
	host, _ := os.ReadFile("/proc/sys/kernel/osrelease")
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if r.code != 0 || len(lines) != 4 || lines[0] == strings.TrimSpace(string(host)) || lines[1] != "1" || lines[2] != "0" || lines[3] != "x" {
		t.Fatalf("microVM run (want a guest kernel other than the host's %s, 1 vCPU, the mask, a writable project):\n%s", host, r)
	}
}

// libkrunRuntime names a runtime that boots libkrun VMs here, or "".
func libkrunRuntime() string {
	if out, err := exec.Command("crun", "--version").Output(); err == nil && strings.Contains(string(out), "+LIBKRUN") {
		if _, err := os.Stat("/dev/kvm"); err == nil {
			return "crun"
		}
	}
	return ""
}

// Egress allowlist on krun (runtime runc): podman's network with the rules applied from
// the host in the container's network namespace before the command starts. The
// sandbox reaches the allowed outside host and port, directly and through the proxy,
// and nothing else (not the outside host's other port, not the host's services); the
// rules cannot be flushed from inside; and when they cannot be applied the run aborts
// (125) before the command starts, leaving no container.
func TestKrunEgressAllowlist(t *testing.T) {
	requirePodman(t)
	o := newOutside(t)
	hs := newHostService(t)
	p := newProject(t)
	flags := []string{"--egress=allowlist", "--allow", o.addr + ":8080"}
	r := p.sandbox("krun", flags, probeScript(o, hs)+"python3 -c '"+deleteNftTable+"'\n")
	if r.code != 0 {
		t.Fatalf("probe failed:\n%s", r)
	}
	want := map[string]bool{"outside:8080": true, "outside:8081": false, "proxy-outside": true, "abstract": false}
	for _, a := range hs.addrs {
		want["host "+a] = false
	}
	got := parseProbe(t, r.stdout)
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s: reachable %v, want %v\n%s", k, got[k], w, r)
		}
	}
	if !strings.Contains(r.stdout, "\nnft refused 1\n") { // EPERM
		t.Errorf("deleting the rules from inside was not refused with EPERM:\n%s", r)
	}
	// The image has no nft; the same request it would send, from python, after which
	// the rules still hold.
	r = p.sandbox("krun", flags, "python3 -c '"+deleteNftTable+"'; curl -sf --noproxy '*' -m 3 http://"+o.addr+":8081/ >/dev/null && echo REACHED; echo done")
	if r.code != 0 || r.stdout != "nft refused 1\ndone\n" {
		t.Errorf("rules changed or bypassed from inside:\n%s", r)
	}

	marker := p.path("proj/started")
	broken := run(t, p.dir, []string{"DEVSANDBOX_NFT=/bin/false"}, "",
		append(append([]string{"--isolator=krun"}, flags...), "--", "/bin/sh", "-c", "touch "+marker)...)
	if broken.code != 125 || !strings.Contains(broken.stderr, "egress rules could not be applied") || !strings.Contains(broken.stderr, "nftables") {
		t.Fatalf("a broken firewall did not abort with 125:\n%s", broken)
	}
	if _, err := os.Stat(marker); !os.IsNotExist(err) {
		t.Fatalf("the command ran although the firewall failed: %v", err)
	}
	if ids := krunContainers(t, p, true); len(ids) != 0 {
		t.Errorf("the container outlived the failed run: %v", ids)
	}
}

// deleteNftTable is Python that asks the kernel, over nfnetlink, to delete the
// devsandbox table (what `nft delete table inet devsandbox` sends) and prints
// "nft DELETED" or "nft refused ERRNO".
const deleteNftTable = `
import socket, struct
try:
    s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 12)
except PermissionError:  # the syscall policy refuses the netfilter netlink socket
    print("nft refused 1")
    raise SystemExit
def msg(typ, flags, seq, payload):
    return struct.pack("=IHHII", 16 + len(payload), typ, flags, seq, 0) + payload
def nfgen(family, res):
    return struct.pack("=BBH", family, 0, socket.htons(res))
name = b"devsandbox\0"
attr = struct.pack("=HH", 4 + len(name), 1) + name
attr += b"\0" * (-len(attr) % 4)
s.send(msg(0x10, 1, 1, nfgen(0, 10)) + msg((10 << 8) | 2, 1 | 4, 2, nfgen(1, 0) + attr) + msg(0x11, 1, 3, nfgen(0, 10)))
r = s.recv(4096)
typ, err = struct.unpack("=H", r[4:6])[0], struct.unpack("=i", r[16:20])[0]
print("nft DELETED" if typ == 2 and err == 0 else "nft refused %d" % -err)
`

// --dry-run shows the calls that apply the allowlist, after the podman command.
func TestKrunAllowlistDryRun(t *testing.T) {
	requirePodman(t)
	p := newProject(t)
	r := run(t, p.dir, nil, "", "--isolator=krun", "--egress=allowlist", "--allow", "192.0.2.7:443", "--dry-run", "--", "true")
	if r.code != 0 || !strings.Contains(r.stdout, "# /usr/bin/nsenter --user=/proc/self/fd/3 --net=/proc/self/fd/4 -- /usr/sbin/nft -f - <<'EOF'") ||
		!strings.Contains(r.stdout, "ip daddr 192.0.2.7 meta l4proto { tcp, udp } th dport 443 accept") {
		t.Errorf("--dry-run:\n%s", r)
	}
}

// A run whose XDG homes move podman's storage (an embedder relocating devsandbox's
// configuration and data does) fails for the image its storage lacks, naming that
// storage and the variables; a run in the usual environment right after it still
// finds the image: it does not get the first run's service (which lives on for a
// while), with the other storage. (XDG_CONFIG_HOME moves too: the usual one holds the
// storage.conf that names the user's storage, see setupPodmanConfig.)
func TestKrunMovedStorage(t *testing.T) {
	forEachIsolatorOf(t, []string{"krun"}, func(t *testing.T, iso string) {
		p := newProject(t)
		config, data := p.path("config"), p.path("data")
		p.write("config/devsandbox/config.toml", suiteConfig+"[krun]\nruntime = \"runc\"\n")
		r := run(t, p.dir, []string{"XDG_RUNTIME_DIR=" + runtimeDir(), "XDG_CONFIG_HOME=" + config, "XDG_DATA_HOME=" + data}, "", "--isolator=krun", "--", "true")
		want := "is not in the podman storage of this environment (" + filepath.Join(data, "containers/storage") + "); load the docker isolator's image (docker save " + krunImage + " | XDG_CONFIG_HOME=" + config + " XDG_DATA_HOME=" + data + " podman load)"
		if r.code != 125 || !strings.Contains(r.stderr, want) || !strings.Contains(r.stderr, "podman chose it from XDG_CONFIG_HOME and XDG_DATA_HOME") {
			t.Errorf("a run with podman's storage moved: %s\nwant 125 and %q", r, want)
		}
		if r := p.sandbox(iso, nil, "echo usual"); r.code != 0 || r.stdout != "usual\n" {
			t.Errorf("a run in the usual environment after it: %s", r)
		}
	})
}

// `sandboxes rm`, as the user, removes a sandbox home that holds what podman made as
// the user's first subordinate uid (a directory, not empty, as the runtime makes a
// mount point: the user cannot remove it), and nothing outside the home: neither
// the links the sandbox planted in its home nor the one podman's entry holds are
// followed.
func TestKrunSandboxesRmSubIDs(t *testing.T) {
	forEachIsolatorOf(t, []string{"krun"}, func(t *testing.T, iso string) {
		p := newProject(t)
		p.write("outside/keep", "keep\n")
		outside := p.path("outside")
		p.mustSandbox(iso, nil, `ln -s `+outside+` ~/link && ln -s `+outside+`/keep ~/link-file && echo x > ~/f`)
		state := filepath.Join(it.home, ".local/share/devsandbox", p.name())
		home := filepath.Join(state, "home")
		mustPodman(t, "unshare", "sh", "-c", `mkdir -p "$1/made/deeper" && echo x > "$1/made/deeper/f" && ln -s "$2" "$1/made/out" && ln -s "$2/keep" "$1/made/deeper/keep" && chown -R -h 1:1 "$1/made"`, "sh", home, outside)
		var st syscall.Stat_t
		if err := syscall.Lstat(filepath.Join(home, "made/deeper"), &st); err != nil || int(st.Uid) == it.uid || st.Uid == 0 {
			t.Fatalf("the planted directory is not a subordinate uid's: uid %d (%v)", st.Uid, err)
		}
		r := run(t, p.dir, nil, "", "sandboxes", "rm", p.name())
		if r.code != 0 || r.stdout != "removed "+p.name()+"\n" {
			t.Errorf("sandboxes rm:\n%s", r)
		}
		if _, err := os.Lstat(state); !os.IsNotExist(err) {
			out, _ := exec.Command("find", state, "-printf", "%u %p\n").CombinedOutput()
			t.Errorf("left after sandboxes rm (%v):\n%s", err, out)
		}
		if b, err := os.ReadFile(filepath.Join(outside, "keep")); err != nil || string(b) != "keep\n" {
			t.Errorf("the file outside the home the links named: %q, %v", b, err)
		}
		if err := syscall.Lstat(outside, &st); err != nil || int(st.Uid) != it.uid {
			t.Errorf("the directory outside the home the links named: uid %d, %v", st.Uid, err)
		}
	})
}

// A krun run removes a dead run's container only when its mark was made where the run
// is (krun.LabelRunWhere): a podman service may be shared with devsandbox runs that see
// other files (another container of the user's, a remote service), where a mark path
// missing here may be a live run's. Both containers below name a mark that does not
// exist here; only the one made here goes.
func TestKrunDeadRunsOnlyHere(t *testing.T) {
	requirePodman(t)
	gone := "/nonexistent-" + randHex(4) + "/devsandbox/app-0123abcd/" + runmark.Dir + "/run-1"
	create := func(where string) string {
		out := mustPodman(t, "create", "--label", krun.LabelRuntime+"=runc", "--label", krun.LabelRunMark+"="+gone,
			"--label", krun.LabelRunWhere+"="+where, krunImage, "true")
		lines := strings.Fields(out)
		return lines[len(lines)-1]
	}
	elsewhere := create("0b0b0b0b-other-boot/mnt:4:4026531841")
	here := create(runmark.Where())
	t.Cleanup(func() {
		// One at a time: podman removes none of the list when one is missing, as
		// here is once the run removed it.
		for _, id := range []string{elsewhere, here} {
			_, _ = podmanAs("rm", "-f", id)
			if _, err := podmanAs("container", "exists", id); err == nil {
				t.Errorf("the test's container %s is left in the test user's podman", id)
			}
		}
	})
	q := newProject(t)
	if r := run(t, q.dir, nil, "", "--isolator=krun", "--", "true"); r.code != 0 {
		t.Fatalf("the run:\n%s", r)
	}
	if _, err := podmanAs("container", "exists", elsewhere); err != nil {
		t.Errorf("the container of a run marked elsewhere was removed (%v)", err)
	}
	if _, err := podmanAs("container", "exists", here); err == nil {
		t.Errorf("the container of a dead run marked here outlived the run (else this test proves nothing)")
	}
}
