//go:build integration

// Package integration runs the built devsandbox binary against real components, as an
// unprivileged user with a clean environment. The conformance tests run once per
// isolator named in DEVSANDBOX_IT_ISOLATORS (default: bwrap), so every backend is
// held to the same guarantees.
package integration

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// env is the test environment shared by every test.
type env struct {
	bin      string // devsandbox binary readable by the test user
	tmp      string // the suite's own directory (the binaries, built test programs), removed at its end
	bwrapDir string // DEVSANDBOX_IT_BWRAP: a directory holding only a link named bwrap, first on PATH
	uid, gid int
	home     string // the test user's HOME in every run: a throwaway directory (setupHome)
	realHome string // the test user's own home, which the suite leaves as it found it (snapshotHome)
	name     string
	asOther  bool     // tests run as root and the sandbox as the test user
	groups   []uint32 // the test user's supplementary groups
}

var it env

func TestMain(m *testing.M) {
	if os.Getenv(stubAPIEnv) != "" {
		serveStubAPI()
		return
	}
	if os.Getenv(embedEnv) != "" {
		os.Exit(serveEmbed())
	}
	if os.Getenv(engineRelayEnv) != "" {
		serveEngineRelay()
		return
	}
	code, err := setup()
	if err != nil {
		fmt.Fprintf(os.Stderr, "integration setup: %v\n", err)
		cleanup()
		if os.Getenv("CI") != "" {
			os.Exit(1)
		}
		os.Exit(0) // no binary or user on a laptop: nothing to run
	}
	// The one part of the own home the suite uses is the test user's podman storage
	// (setupPodmanConfig): setup may create it (and ~/.local) to load the image, so the
	// snapshot is taken after setup; the krun runs' containers then come and go in it,
	// below what the snapshot lists.
	guard := snapshotHome(it.realHome)
	if code == 0 {
		code = m.Run()
	}
	if !suiteLeftovers() && code == 0 {
		code = 1
	}
	if changed := guard.changes(snapshotHome(it.realHome)); len(changed) > 0 {
		fmt.Fprintf(os.Stderr, "FAIL: the suite changed the test user's own home %s (runs must use the throwaway home %s):\n  %s\n",
			it.realHome, it.home, strings.Join(changed, "\n  "))
		code = 1
	}
	cleanup()
	os.Exit(code)
}

// cleanup removes the images the suite made in the docker engines
// (removeSuiteImages), and the suite's directories.
func cleanup() {
	removeSuiteImages()
	if it.home != "" && it.home != it.realHome {
		endSuiteServices()
		removeHome(it.home)
	}
	if it.tmp != "" {
		os.RemoveAll(it.tmp)
	}
}

func setup() (int, error) {
	src := os.Getenv("DEVSANDBOX_BIN")
	if src == "" {
		return 0, fmt.Errorf("DEVSANDBOX_BIN is not set: run `make integration`")
	}
	if os.Getuid() == 0 {
		name := os.Getenv("DEVSANDBOX_TEST_USER")
		if name == "" {
			name = "dsbtest"
		}
		u, err := user.Lookup(name)
		if err != nil {
			return 0, fmt.Errorf("test user %s: %w (run scripts/setup-test-env.sh as root)", name, err)
		}
		it.uid, _ = strconv.Atoi(u.Uid)
		it.gid, _ = strconv.Atoi(u.Gid)
		it.realHome, it.name, it.asOther = u.HomeDir, name, true
	} else {
		u, err := user.Current()
		if err != nil {
			return 0, err
		}
		it.uid, it.gid, it.realHome, it.name = os.Getuid(), os.Getgid(), u.HomeDir, u.Username
	}
	if err := setupHome(); err != nil {
		return 0, err
	}
	// A copy the test user can read and execute, outside any project.
	dir, err := os.MkdirTemp("", "devsandbox-it-bin-")
	if err != nil {
		return 0, err
	}
	it.tmp = dir
	if err := os.Chmod(dir, 0o755); err != nil {
		return 0, err
	}
	for _, name := range binaries() {
		data, err := os.ReadFile(filepath.Join(filepath.Dir(src), name))
		if (name == "devsandbox-docker" || name == "devsandbox-krun") && os.IsNotExist(err) {
			continue // an older build: those tests skip (and fail in CI)
		}
		if err != nil {
			return 0, err
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o755); err != nil {
			return 0, err
		}
	}
	it.bin = filepath.Join(dir, "devsandbox")
	if err := setupBwrap(dir); err != nil {
		return 0, err
	}
	if it.asOther {
		// The test user's supplementary groups (docker) apply to its runs.
		u, _ := user.LookupId(strconv.Itoa(it.uid))
		gids, _ := u.GroupIds()
		for _, g := range gids {
			if n, err := strconv.Atoi(g); err == nil {
				it.groups = append(it.groups, uint32(n))
			}
		}
	}
	recordSuiteImages()
	setupDocker()
	setupPodman()
	recordSuiteLeft()
	return 0, nil
}

// binaries are the names `make build` makes (the Makefile's BINARIES, passed by
// `make integration`).
func binaries() []string {
	if s := os.Getenv("DEVSANDBOX_BINARIES"); s != "" {
		return strings.Fields(s)
	}
	return []string{"devsandbox", "devsandbox-init", "devsandbox-bwrap-init", "devsandbox-proxy", "devsandbox-docker", "devsandbox-krun"}
}

// setupBwrap makes the runs use the bwrap at DEVSANDBOX_IT_BWRAP (an absolute path;
// another bubblewrap than the host's, for compatibility runs) instead of the one on
// PATH: a link to it, named bwrap, in a directory of dir that hostPath puts first.
func setupBwrap(dir string) error {
	b := os.Getenv("DEVSANDBOX_IT_BWRAP")
	if b == "" {
		return nil
	}
	if !filepath.IsAbs(b) {
		return fmt.Errorf("DEVSANDBOX_IT_BWRAP=%s: not an absolute path", b)
	}
	if _, err := os.Stat(b); err != nil {
		return fmt.Errorf("DEVSANDBOX_IT_BWRAP: %w", err)
	}
	it.bwrapDir = filepath.Join(dir, "bwrap-bin")
	if err := os.Mkdir(it.bwrapDir, 0o755); err != nil {
		return err
	}
	return os.Symlink(b, filepath.Join(it.bwrapDir, "bwrap"))
}

// hostPath is the PATH entry of devsandbox's environment: dirs (colon-separated),
// after the DEVSANDBOX_IT_BWRAP directory when that is set.
func hostPath(dirs string) string {
	if it.bwrapDir != "" {
		return "PATH=" + it.bwrapDir + ":" + dirs
	}
	return "PATH=" + dirs
}

// requireBwrap skips on a machine without bubblewrap, and fails in CI.
func requireBwrap(t *testing.T) {
	t.Helper()
	look := "bwrap"
	if it.bwrapDir != "" {
		look = filepath.Join(it.bwrapDir, "bwrap")
	}
	if _, err := exec.LookPath(look); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("bwrap is required in CI: %v", err)
		}
		t.Skip("bwrap not installed")
	}
}

// isolators are the backends the conformance suite runs against.
func isolators() []string {
	if s := os.Getenv("DEVSANDBOX_IT_ISOLATORS"); s != "" {
		return strings.Fields(strings.ReplaceAll(s, ",", " "))
	}
	return []string{"bwrap"}
}

// forEachIsolator runs f as a subtest per isolator.
func forEachIsolator(t *testing.T, f func(t *testing.T, iso string)) {
	forEachIsolatorOf(t, isolators(), f)
}

// forEachIsolatorOf runs f as a subtest per isolator of isos.
func forEachIsolatorOf(t *testing.T, isos []string, f func(t *testing.T, iso string)) {
	inLanes(t, isos, func(t *testing.T, iso string) {
		switch iso {
		case "bwrap":
			requireBwrap(t)
		case localDocker, remoteDocker, tcpDocker, rootlessDocker:
			requireEngine(t, iso)
		case "krun":
			requirePodman(t)
		}
		f(t, iso)
	})
}

// isolatorReady says whether what forEachIsolatorOf's subtest of iso requires is
// there, for a test that starts work on iso before its subtests run.
func isolatorReady(iso string) bool {
	switch iso {
	case "bwrap":
		look := "bwrap"
		if it.bwrapDir != "" {
			look = filepath.Join(it.bwrapDir, "bwrap")
		}
		_, err := exec.LookPath(look)
		return err == nil
	case localDocker, remoteDocker, tcpDocker, rootlessDocker:
		return engineReady[iso] == ""
	case "krun":
		return podmanReady == ""
	}
	return true
}

// homeElsewhere is a containers' home (docker.home) that is not the host home's path,
// as the default /home/<user> is not for a user whose home is elsewhere (macOS's
// /Users/<user>, a Linux home outside /home). A path below the host home is then at two
// places in a container: in the sandbox home, and at its host path where the project
// or a user's bind shows it.
const homeElsewhere = "/home/dsb-elsewhere"

// containerHome is the containers' home (docker.home) of the suite's runs on iso:
// homeElsewhere on the variants of elsewhereVariants, else the host home's path, as
// the default /home/<user> is for a Linux user whose home that is.
func containerHome(iso string) string {
	if slices.Contains(elsewhereVariants(), iso) {
		return homeElsewhere
	}
	return it.home
}

// elsewhereVariants are the container variants whose containers' home is elsewhere
// than the host home in every test (elsewhereConfig), as on a Mac: the host home
// /Users/<user>, the containers' /home/<user>. DEVSANDBOX_IT_HOME_ELSEWHERE names
// them; by default docker-remote, the stand-in for Docker Desktop, docker-tcp and krun. docker,
// against this machine's engine, keeps the home at the host home's path, as on Linux.
func elsewhereVariants() []string {
	if s, ok := os.LookupEnv("DEVSANDBOX_IT_HOME_ELSEWHERE"); ok {
		return strings.Fields(strings.ReplaceAll(s, ",", " "))
	}
	return []string{remoteDocker, tcpDocker, "krun"}
}

// forEachContainerHome runs f as a subtest per containers' home: the suite's (at the
// host home's path) and homeElsewhere. bwrap ignores docker.home: it runs both alike.
func forEachContainerHome(t *testing.T, f func(t *testing.T, home string)) {
	for _, h := range []struct{ name, home string }{{"home at host path", it.home}, {"home elsewhere", homeElsewhere}} {
		t.Run(h.name, func(t *testing.T) { f(t, h.home) })
	}
}

// project is a scratch project owned by the test user.
type project struct {
	t    *testing.T
	root string // a scratch dir under the test user's (throwaway) home: holds dir and siblings
	dir  string // the project
}

// newProject creates an empty git repository in a fresh dir under the test user's home.
func newProject(t *testing.T) *project {
	t.Helper()
	var rnd [4]byte
	_, _ = rand.Read(rnd[:])
	root := filepath.Join(it.home, "it-"+hex.EncodeToString(rnd[:]))
	p := &project{t: t, root: root, dir: filepath.Join(root, "proj")}
	p.mkdir("proj/.git/hooks")
	p.write("proj/.git/config", "[core]\n\trepositoryformatversion = 0\n")
	p.write("proj/.git/HEAD", "ref: refs/heads/main\n")
	p.mkdir("proj/.git/objects")
	p.mkdir("proj/.git/refs")
	ownProject(t, p)
	t.Cleanup(func() {
		// Every process the test started is gone by now (the cleanups registered
		// after this one ran first): none of its runs may have left one behind.
		checkNoOrphans(t, root)
		p.forget(p.dir) // first: a kept container may still write to the project
		os.RemoveAll(root)
	})
	return p
}

// name is the project's name as devsandbox derives it: <basename>-<short hash of path>.
func (p *project) name() string { return projectName(p.dir) }

func projectName(dir string) string {
	sum := sha256.Sum256([]byte(dir))
	return filepath.Base(dir) + "-" + hex.EncodeToString(sum[:4])
}

// forget removes what devsandbox keeps for the project at dir, as a user would:
// `devsandbox sandboxes rm NAME` against each docker engine the suite uses that holds
// a container or volume of the project (engineHolds: what `sandboxes list` shows
// there, such as the content volume a docker run makes), then the
// sandbox home and state directly, for a project no engine knows (a bwrap run, or no
// engine on this machine). A removal that fails fails the test.
func (p *project) forget(dir string) {
	p.t.Helper()
	name := projectName(dir)
	for _, iso := range []string{localDocker, remoteDocker, rootlessDocker} {
		if engineReady[iso] != "" {
			continue
		}
		engine := []string{"DOCKER_HOST=" + engineOf(iso)}
		held, err := engineHolds(p.t, iso, name)
		if err != nil {
			p.t.Errorf("forgetting %s: %v", name, err)
			continue
		}
		if !held {
			continue
		}
		// A run whose devsandbox a test killed may still be ending in its
		// devsandbox-docker (removing its container, then dropping its run mark):
		// rm refuses a sandbox in use, so it is asked again until that run is over.
		deadline := time.Now().Add(30 * time.Second)
		for {
			r := run(p.t, it.home, engine, "", "sandboxes", "rm", name)
			if r.code == 0 {
				break
			}
			if !strings.Contains(r.stderr, "a run of it is going on") || time.Now().After(deadline) {
				p.t.Errorf("devsandbox sandboxes rm %s (%s):\n%s", name, iso, r)
				break
			}
			time.Sleep(100 * time.Millisecond) // polling for the other run's end, bounded above
		}
	}
	os.RemoveAll(filepath.Join(it.home, ".local/state/devsandbox", name))
	os.RemoveAll(filepath.Join(it.home, ".local/share/devsandbox", name))
	// The project's socket directory under the runtime directory the suite's krun runs
	// (and a few others) set: one per project, which stayed after every suite
	// (`sandboxes rm` removes it, but runs here without XDG_RUNTIME_DIR). It follows no
	// link in it.
	os.RemoveAll(filepath.Join(runtimeDir(), "devsandbox", name[strings.LastIndexByte(name, '-')+1:]))
}

// engineHolds reports whether docker variant iso's engine holds a container or volume
// of the project named name (what `sandboxes list` shows for it there). The engine is
// asked directly, two requests on its socket: forget runs after every test, for each
// engine, and `devsandbox sandboxes list --json` there started two programs each time
// (about a tenth of a second a project on an idle machine, over a thousand projects
// a suite). An engine not on a unix socket is asked through that command still.
func engineHolds(t *testing.T, iso, name string) (bool, error) {
	t.Helper()
	host := engineOf(iso)
	sock, ok := strings.CutPrefix(host, "unix://")
	if !ok {
		r := run(t, it.home, []string{"DOCKER_HOST=" + host}, "", "sandboxes", "list", "--json")
		var list []struct { // the fields of `sandboxes list --json` used here
			Name                string
			Containers, Volumes []string
		}
		if err := json.Unmarshal([]byte(r.stdout), &list); r.code != 0 || err != nil {
			return false, fmt.Errorf("devsandbox sandboxes list --json (%s): %v\n%s", iso, err, r)
		}
		for _, s := range list {
			if s.Name == name && len(s.Containers)+len(s.Volumes) > 0 {
				return true, nil
			}
		}
		return false, nil
	}
	c := http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", sock)
		},
	}}
	defer c.CloseIdleConnections()
	f, _ := json.Marshal(map[string][]string{"label": {"dev.devsandbox.name=" + name, "dev.devsandbox.uid=" + strconv.Itoa(it.uid)}})
	q := "filters=" + url.QueryEscape(string(f))
	for _, path := range []string{"/containers/json?all=1&" + q, "/volumes?" + q} {
		resp, err := c.Get("http://engine" + path)
		if err != nil {
			return false, fmt.Errorf("asking the %s engine (%s) for %s: %w", iso, host, name, err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			return false, fmt.Errorf("asking the %s engine (%s) for %s: %s %v: %s", iso, host, name, resp.Status, err, body)
		}
		var got struct{ Volumes []json.RawMessage } // /volumes; /containers/json is a list
		if strings.HasPrefix(path, "/volumes") {
			if err := json.Unmarshal(body, &got); err != nil {
				return false, fmt.Errorf("the %s engine's volumes: %w", iso, err)
			}
			if len(got.Volumes) > 0 {
				return true, nil
			}
			continue
		}
		var cs []json.RawMessage
		if err := json.Unmarshal(body, &cs); err != nil {
			return false, fmt.Errorf("the %s engine's containers: %w", iso, err)
		}
		if len(cs) > 0 {
			return true, nil
		}
	}
	return false, nil
}

// path returns the absolute path of rel below the scratch root.
func (p *project) path(rel string) string { return filepath.Join(p.root, rel) }

func (p *project) mkdir(rel string) {
	p.t.Helper()
	full := p.path(rel)
	if err := os.MkdirAll(full, 0o755); err != nil {
		p.t.Fatal(err)
	}
	p.chownUp(full)
}

func (p *project) write(rel, content string) {
	p.t.Helper()
	full := p.path(rel)
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		p.t.Fatal(err)
	}
	if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
		p.t.Fatal(err)
	}
	p.chownUp(full)
}

// writeConfig writes a config file for a run on iso. A --config file replaces the
// test user's config file, which holds the suite's settings (suiteConfig): they are
// added, so the containers' home is iso's here too (containerHome), and the krun
// variant runs a plain container here as everywhere else in the suite, with or
// without a KVM device.
func (p *project) writeConfig(iso, rel, content string) string {
	p.t.Helper()
	return p.writeConfigHome(iso, rel, content, containerHome(iso))
}

// writeConfigHome is writeConfig with the containers' home (docker.home) at home.
func (p *project) writeConfigHome(iso, rel, content, home string) string {
	p.t.Helper()
	home = fmt.Sprintf("home = %q\n", home)
	if strings.Contains(content, "[docker]\n") {
		content = strings.Replace(content, "[docker]\n", "[docker]\n"+home, 1)
	} else {
		content += "\n[docker]\n" + home
	}
	if iso == "krun" {
		content += "\n[krun]\nruntime = \"runc\"\n"
	}
	p.write(rel, content)
	return p.path(rel)
}

// writeHome writes a file under the test user's home, the suite's throwaway one (bait
// for hide tests).
func writeHome(t *testing.T, rel, content string) {
	t.Helper()
	full := filepath.Join(it.home, rel)
	if err := os.MkdirAll(filepath.Dir(full), 0o700); err != nil {
		t.Fatal(err)
	}
	// Whole or not at all: subtests in lanes (inLanes) may write the same bait while
	// another's run reads it.
	tmp, err := os.CreateTemp(filepath.Dir(full), ".writehome-")
	if err != nil {
		t.Fatal(err)
	}
	_, err = tmp.WriteString(content)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), full)
	}
	if err != nil {
		os.Remove(tmp.Name())
		t.Fatal(err)
	}
	for d := full; d != it.home && d != "/"; d = filepath.Dir(d) {
		_ = os.Lchown(d, it.uid, it.gid)
	}
}

// chownUp gives full and its parents up to the test user's home to the test user.
func (p *project) chownUp(full string) {
	for d := full; d != it.home && d != "/" && len(d) > len(it.home); d = filepath.Dir(d) {
		if err := os.Lchown(d, it.uid, it.gid); err != nil {
			p.t.Fatal(err)
		}
	}
}

// result is one finished devsandbox run.
type result struct {
	stdout, stderr string
	code           int
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
}

// baseEnv is the clean environment devsandbox runs with: the throwaway home, with
// the XDG base directories named at their defaults in it (a later NAME=VALUE of extra
// replaces an earlier one: exec.Cmd keeps the last).
func baseEnv(extra ...string) []string {
	e := []string{
		"HOME=" + it.home, "USER=" + it.name, "LOGNAME=" + it.name,
		hostPath("/usr/local/bin:/usr/bin:/bin"), "LANG=C.UTF-8", "SHELL=/bin/sh",
	}
	e = append(e, xdgEnv(it.home)...)
	if v := os.Getenv(itEarlyVar); v != "" { // before extra: a test's own value wins
		e = append(e, "DEVSANDBOX_EARLY_START="+v)
	}
	return append(e, extra...)
}

// command prepares devsandbox with args in dir as the test user (see isolatorArgs for
// the docker-remote variant).
func command(ctx context.Context, dir string, env []string, args ...string) *exec.Cmd {
	args, env = isolatorArgs(args, env)
	cmd := exec.CommandContext(ctx, it.bin, args...)
	cmd.Dir = dir
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{}
	if it.asOther {
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: uint32(it.uid), Gid: uint32(it.gid), Groups: it.groups}
	}
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// run runs devsandbox to completion with a clean environment plus extraEnv.
func run(t *testing.T, dir string, extraEnv []string, stdin string, args ...string) result {
	t.Helper()
	return runBin(t, it.bin, dir, extraEnv, stdin, args...)
}

// runBin is run with another devsandbox binary (an installed one).
func runBin(t *testing.T, bin, dir string, extraEnv []string, stdin string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	audit := earlyAudited(bin, args)
	if audit {
		args = append([]string{"--debug"}, args...)
	}
	cmd := command(ctx, dir, baseEnv(extraEnv...), args...)
	cmd.Path, cmd.Args[0] = bin, bin
	cmd.Stdin = strings.NewReader(stdin)
	r := runResult(t, cmd)
	if audit {
		r.stderr = earlyAudit(t, r.stderr)
	}
	return r
}

// sandbox runs `devsandbox --isolator=iso [flags] -- sh -c script` in the project.
func (p *project) sandbox(iso string, flags []string, script string) result {
	p.t.Helper()
	args := append([]string{"--isolator=" + iso}, flags...)
	args = append(args, "--", "/bin/sh", "-c", script)
	return run(p.t, p.dir, nil, "", args...)
}

// mustSandbox is sandbox that fails the test unless the run exits 0.
func (p *project) mustSandbox(iso string, flags []string, script string) string {
	p.t.Helper()
	r := p.sandbox(iso, flags, script)
	if r.code != 0 {
		p.t.Fatalf("sandboxed script failed:\n%s\n%s", script, r)
	}
	return r.stdout
}

// started starts cmd with its stdout read line by line and stdin held open; the
// returned release writes a newline to stdin and closes it (what a sandboxed
// `read` waits for). The test's end kills and reaps cmd if it still runs.
func started(t *testing.T, cmd *exec.Cmd) (*lineReader, func()) {
	t.Helper()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	lr := startLines(t, cmd)
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return lr, func() { _, _ = io.WriteString(stdin, "\n"); stdin.Close() }
}

// startLines starts cmd with its stdout read line by line.
func startLines(t *testing.T, cmd *exec.Cmd) *lineReader {
	t.Helper()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return newLineReader(t, stdout)
}

// lineReader reads lines from a pipe with a deadline, for synchronising with a
// sandboxed command without sleeping.
type lineReader struct {
	t     *testing.T
	lines chan string
}

func newLineReader(t *testing.T, r io.Reader) *lineReader {
	lr := &lineReader{t: t, lines: make(chan string, 64)}
	go func() {
		var buf []byte
		b := make([]byte, 4096)
		for {
			n, err := r.Read(b)
			buf = append(buf, b[:n]...)
			for {
				i := bytes.IndexByte(buf, '\n')
				if i < 0 {
					break
				}
				lr.lines <- strings.TrimRight(string(buf[:i]), "\r")
				buf = buf[i+1:]
			}
			if err != nil {
				if len(buf) > 0 {
					lr.lines <- string(buf)
				}
				close(lr.lines)
				return
			}
		}
	}()
	return lr
}

// next returns the next line, or "" when the output ends first, failing after 30 s.
func (lr *lineReader) next() string {
	lr.t.Helper()
	select {
	case l := <-lr.lines:
		return l
	case <-time.After(30 * time.Second):
		lr.t.Fatal("no output within 30s")
	}
	return ""
}

// waitFor returns the first line with the given prefix, failing after 30 s.
func (lr *lineReader) waitFor(prefix string) string {
	lr.t.Helper()
	return lr.waitForIn(30*time.Second, prefix)
}

// waitForIn is waitFor, failing after d.
func (lr *lineReader) waitForIn(d time.Duration, prefix string) string {
	lr.t.Helper()
	deadline := time.After(d)
	for {
		select {
		case l, ok := <-lr.lines:
			if !ok {
				lr.t.Fatalf("output ended before a line starting with %q", prefix)
			}
			if strings.HasPrefix(l, prefix) {
				return l
			}
		case <-deadline:
			lr.t.Fatalf("no line starting with %q within %s", prefix, d)
		}
	}
}
