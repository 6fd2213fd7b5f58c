//go:build integration

package integration

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The CLI contract: argv splitting, exit statuses of devsandbox itself, config errors.
func TestCLIContract(t *testing.T) {
	requireBwrap(t)
	p := newProject(t)
	p.write("bad.toml", "[sandbox]\nmode = \"enforce\"\ntmp = \"ramdisk\"\n")
	p.write("tool.toml", "[tools.claud]\nsecrets = false\n")
	p.write("gone.toml", "[sandbox]\nro_binds = [\n  \""+p.path("gone")+"\",\n]\n")
	tests := []struct {
		name   string
		env    []string
		args   []string
		code   int
		stdout string
		stderr string // a substring the message must hold: the file, line and key
	}{
		{name: "-- ends flags: doctor is a program", args: []string{"--", "doctor"}, code: 127},
		{name: "commas stay in values", args: []string{"-e", "A=x,y", "--", "/bin/sh", "-c", "echo $A"}, stdout: "x,y\n"},
		{name: "unknown flag is devsandbox's own failure", args: []string{"--bogus", "true"}, code: 125, stderr: "unknown flag --bogus"},
		{name: "a subcommand's unknown flag too", args: []string{"doctor", "--bogus"}, code: 125, stderr: "unknown flag --bogus"},
		{name: "config error names file, line, key", args: []string{"--config", p.path("bad.toml"), "true"}, code: 125,
			stderr: p.path("bad.toml") + ":3: sandbox.tmp"},
		{name: "unknown egress mode", args: []string{"--egress=vpn", "true"}, code: 125, stderr: "flag --egress"},
		{name: "nesting refused", env: []string{"DEVSANDBOX=1"}, args: []string{"true"}, code: 125, stderr: "nest"},
		{name: "nesting with explicit isolator", env: []string{"DEVSANDBOX=1"}, args: []string{"--isolator=bwrap", "true"}},
		{name: "--pids N: the value is the next word, as --help writes it", args: []string{"--pids", "100", "--", "/bin/sh", "-c", "echo ok"}, stdout: "ok\n"},
		{name: "a misspelt tool stops the run", args: []string{"--config", p.path("tool.toml"), "true"}, code: 125,
			stderr: p.path("tool.toml") + ":1: tools.claud: there is no tool \"claud\"; the tools are "},
		{name: "a flag without its value, named as typed", args: []string{"--pids"}, code: 125, stderr: "flag --pids needs a value"},
		{name: "a subcommand given an argument it does not take", args: []string{"sandboxes", "prune", "--dry-run", p.name()}, code: 125,
			stderr: "sandboxes prune takes no arguments"},
		{name: "prune --days out of range", args: []string{"sandboxes", "prune", "--days", "-1"}, code: 125, stderr: "not a number of days"},
		{name: "an unknown subcommand", args: []string{"config", "bogus"}, code: 125, stderr: "config bogus: no such command"},
		{name: "config trust takes at most one file", args: []string{"config", "trust", "a.toml", "b.toml"}, code: 125, stderr: "config trust takes at most one FILE"},
		{name: "a missing bind source names its file and line", args: []string{"--config", p.path("gone.toml"), "true"}, code: 125,
			stderr: "sandbox.ro_binds (" + p.path("gone.toml") + ":3): " + p.path("gone") + " does not exist; create it or remove the entry"},
		{name: "--dry-run stops on it too", args: []string{"--config", p.path("gone.toml"), "--dry-run", "true"}, code: 125, stderr: "sandbox.ro_binds (" + p.path("gone.toml") + ":3)"},
		{name: "doctor says a run would stop, exit 1", args: []string{"--config", p.path("gone.toml"), "doctor"}, code: 1,
			stderr: "devsandbox: warning: a run from here would stop: configuration does not fit this host: sandbox.ro_binds (" + p.path("gone.toml") + ":3)"},
		{name: "a missing --secret-file is named by its flag", args: []string{"--secret-file", "TOKEN=" + p.path("gone"), "true"}, code: 125,
			stderr: "--secret-file TOKEN=" + p.path("gone") + ": " + p.path("gone") + " cannot be read"},
		{name: "a value flag does not take --", args: []string{"--allow", "--", "true"}, code: 125, stderr: "flag --allow needs a value"},
		{name: "version", args: []string{"version"}, stdout: "devsandbox "},
		{name: "--version", args: []string{"--version"}, stdout: "devsandbox "},
	}
	for _, tt := range tests {
		r := run(t, p.dir, tt.env, "", tt.args...)
		if r.code != tt.code || !strings.HasPrefix(r.stdout, tt.stdout) || !strings.Contains(r.stderr, tt.stderr) {
			t.Errorf("%s: got\n%s\nwant exit %d, stdout prefix %q, stderr holding %q", tt.name, r, tt.code, tt.stdout, tt.stderr)
		}
	}
}

// devsandbox refuses / and the home dir as a project, and a symlinked .git.
func TestRefusedProjects(t *testing.T) {
	requireBwrap(t)
	if r := run(t, it.home, nil, "", "--", "true"); r.code != 125 || !strings.Contains(r.stderr, "home directory") {
		t.Errorf("home as project:\n%s", r)
	}
	if r := run(t, "/", nil, "", "--", "true"); r.code != 125 || !strings.Contains(r.stderr, "root directory") {
		t.Errorf("/ as project:\n%s", r)
	}
	p := newProject(t)
	p.mkdir("real-git/hooks")
	p.mkdir("other")
	if err := os.Symlink(p.path("real-git"), p.path("other/.git")); err != nil {
		t.Fatal(err)
	}
	_ = os.Lchown(p.path("other/.git"), it.uid, it.gid)
	if r := run(t, p.path("other"), nil, "", "--", "true"); r.code != 125 || !strings.Contains(r.stderr, "symlink") {
		t.Errorf("symlinked .git:\n%s", r)
	}
}

// A linked worktree binds its gitdir and common dir: git works inside, and the
// common dir's hooks and config stay read-only.
func TestLinkedWorktree(t *testing.T) {
	forEachIsolator(t, func(t *testing.T, iso string) {
		if _, err := exec.LookPath("git"); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatal("git is required in CI")
			}
			t.Skip("git not installed")
		}
		p := newProject(t)
		main := p.path("main")
		gitAs := func(dir string, args ...string) {
			t.Helper()
			cmd := command(t.Context(), dir, baseEnv("GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@e", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@e"), args...)
			cmd.Path, cmd.Args = "/usr/bin/git", append([]string{"git"}, args...)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("git %v: %v\n%s", args, err, out)
			}
		}
		p.mkdir("main")
		gitAs(main, "init", "-q", "-b", "main")
		p.write("main/f.txt", "one\n")
		gitAs(main, "add", "f.txt")
		gitAs(main, "commit", "-qm", "one")
		gitAs(main, "worktree", "add", "-q", p.path("wt"), "-b", "wt")
		t.Cleanup(func() { p.forget(p.path("wt")) })
		out := run(t, p.path("wt"), []string{"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@e", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@e"}, "",
			"--isolator="+iso, "--", "/bin/sh", "-c", `
			echo two >> f.txt && git commit -qam two && git log --oneline | wc -l
			touch `+filepath.Join(main, ".git/hooks/post-checkout")+` 2>/dev/null && echo HOOK-WRITTEN
			echo x >> `+filepath.Join(main, ".git/config")+` 2>/dev/null && echo CONFIG-WRITTEN
			cat `+filepath.Join(main, "f.txt")+` 2>/dev/null || echo main-worktree-hidden`)
		if out.code != 0 || strings.TrimSpace(out.stdout) != "2\nmain-worktree-hidden" {
			t.Fatalf("worktree in the sandbox:\n%s", out)
		}
	})
}

// TestSandboxesListBwrap: a project run only with bwrap (the default isolator) is
// listed with its directory, so once the directory is gone `sandboxes prune` removes
// what devsandbox keeps for it as the help says ("projects gone"), not only after
// --days.
func TestSandboxesListBwrap(t *testing.T) {
	requireBwrap(t)
	p := newProject(t)
	p.mustSandbox("bwrap", []string{"--egress=none"}, "true")
	r := run(t, p.root, nil, "", "sandboxes", "list", "--json")
	var list []struct{ Name, Dir string }
	if err := json.Unmarshal([]byte(r.stdout), &list); r.code != 0 || err != nil {
		t.Fatalf("sandboxes list --json: %v\n%s", err, r)
	}
	i := slices.IndexFunc(list, func(s struct{ Name, Dir string }) bool { return s.Name == p.name() })
	if i < 0 || list[i].Dir != p.dir {
		t.Fatalf("sandboxes list --json: want %s with dir %s:\n%s", p.name(), p.dir, r)
	}
	if err := os.RemoveAll(p.dir); err != nil {
		t.Fatal(err)
	}
	r = run(t, p.root, nil, "", "sandboxes", "prune", "--dry-run")
	want := "would remove " + p.name() + ": the project " + p.dir + " no longer exists"
	if r.code != 0 || !slices.Contains(strings.Split(r.stdout, "\n"), want) {
		t.Fatalf("sandboxes prune --dry-run: want the line %q:\n%s", want, r)
	}
}

// Outside a project (in the home directory) doctor judges the engine a run would
// use: the user file's docker.host, else DOCKER_HOST, else the docker context, in
// the words a launch uses; an ssh:// endpoint is refused. A user file that does not
// load (isolator = docker with an ssh:// DOCKER_HOST) makes doctor fail.
func TestDoctorOutsideAProject(t *testing.T) {
	requireBwrap(t)
	requireEngine(t, remoteDocker)
	p := newProject(t)
	dockerDir := p.path("docker-config")
	for name, host := range map[string]string{"stand-in": remoteEngine, "build": "ssh://me@build"} {
		p.write("docker-config/contexts/meta/"+contextID(name)+"/meta.json", `{"Name":"`+name+`","Endpoints":{"docker":{"Host":"`+host+`"}}}`)
	}
	userConfig := func(doc string) string {
		p.write("xdg-"+contextID(doc)[:8]+"/devsandbox/config.toml", doc)
		return "XDG_CONFIG_HOME=" + p.path("xdg-"+contextID(doc)[:8])
	}
	refusedContext := `docker context "build": "ssh://me@build": devsandbox does not speak to an engine over ssh; forward its socket (ssh -nNT -L /ABSOLUTE/SOCKET:/var/run/docker.sock HOST) and set docker.host = "unix:///ABSOLUTE/SOCKET"`
	refusedEnv := `env DOCKER_HOST: "ssh://me@build": devsandbox does not speak to an engine over ssh; forward its socket (ssh -nNT -L /ABSOLUTE/SOCKET:/var/run/docker.sock HOST) and set DOCKER_HOST=unix:///ABSOLUTE/SOCKET`
	addressFix := "; fix: fix DOCKER_HOST or the docker context (docker context use default), or set docker.host"
	cases := []struct {
		name string
		env  []string
		code int
		// rows: doctor's docker rows (a detail ending in … is a prefix); verdict: its
		// last line.
		rows    map[string]string
		verdict string
		stderr  string // after the not-a-project warning
	}{
		{name: "the docker context", env: []string{"DOCKER_CONFIG=" + dockerDir, "DOCKER_CONTEXT=stand-in"},
			rows:    map[string]string{"docker engine": "active  " + remoteEngine + " (context stand-in), Docker …"},
			verdict: "selected isolator: auto, which picks bwrap here — can run"},
		{name: "an ssh docker context", env: []string{"DOCKER_CONFIG=" + dockerDir, "DOCKER_CONTEXT=build"},
			rows: map[string]string{
				"docker engine":   "unavailable  " + refusedContext + addressFix,
				"docker isolator": "unavailable  " + refusedContext + addressFix,
			},
			verdict: "selected isolator: auto, which picks bwrap here — can run"},
		{name: "the user file's docker.host over DOCKER_HOST and the context",
			env: []string{"DOCKER_HOST=ssh://me@build", "DOCKER_CONFIG=" + dockerDir, "DOCKER_CONTEXT=build",
				userConfig("isolator = \"docker\"\n[docker]\nhost = \"" + remoteEngine + "\"\n[krun]\nruntime = \"runc\"\n")},
			rows:    map[string]string{"docker engine": "active  " + remoteEngine + " (docker.host), Docker …", "docker isolator": "active  "},
			verdict: "selected isolator: docker — can run"},
		{name: "isolator = docker with an image the engine lacks", code: 1,
			env: []string{userConfig("isolator = \"docker\"\n[docker]\nhost = \"" + remoteEngine + "\"\nimage = \"devsandbox-test/absent:1\"\n[krun]\nruntime = \"runc\"\n")},
			rows: map[string]string{
				"docker image":    "unavailable  devsandbox-test/absent:1 is not on the engine; fix: devsandbox image build (or set docker.image / --image to an image you have)",
				"docker isolator": "unavailable  the image devsandbox-test/absent:1 is not on the docker engine at " + remoteEngine + "; fix: devsandbox image build (or set docker.image / --image to an image you have)",
			},
			verdict: "selected isolator: docker — CANNOT run"},
		{name: "isolator = docker with an ssh DOCKER_HOST", code: 1,
			env:     []string{"DOCKER_HOST=ssh://me@build", userConfig("isolator = \"docker\"\n[krun]\nruntime = \"runc\"\n")},
			rows:    map[string]string{"docker isolator": "unavailable  " + refusedEnv + addressFix},
			verdict: "selected isolator: unknown — the configuration does not load (see the warning above); no run starts until it is fixed",
			stderr:  "devsandbox: warning: " + refusedEnv + "\n"},
	}
	notProject := "devsandbox: warning: unusable project directory: " + it.home + " is your home directory; run devsandbox from a project directory (or a subdirectory of one)\n"
	for _, c := range cases {
		r := run(t, it.home, c.env, "", "doctor")
		lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
		if r.code != c.code || lines[len(lines)-1] != c.verdict || r.stderr != notProject+c.stderr {
			t.Errorf("%s: want exit %d, the verdict %q and stderr\n%s%s\ngot\n%s", c.name, c.code, c.verdict, notProject, c.stderr, r)
		}
		for name, want := range c.rows {
			got := doctorRow(r.stdout, name)
			if prefix, ok := strings.CutSuffix(want, "…"); ok && !strings.HasPrefix(got, prefix) || !ok && got != want {
				t.Errorf("%s: doctor's %s row:\n%q\nwant\n%q", c.name, name, got, want)
			}
		}
	}
}

// doctorRow returns the status and detail of doctor's row name, their columns'
// padding folded to two spaces ("" when there is no such row).
func doctorRow(out, name string) string {
	for _, l := range strings.Split(out, "\n") {
		if rest, ok := strings.CutPrefix(l, name+"  "); ok {
			status, detail, _ := strings.Cut(strings.TrimLeft(rest, " "), " ")
			return status + "  " + strings.TrimLeft(detail, " ")
		}
	}
	return ""
}

// contextID is the directory name of docker CLI context name's files, as the docker
// CLI makes it (the hex SHA-256 of the name).
func contextID(name string) string {
	sum := sha256.Sum256([]byte(name))
	return hex.EncodeToString(sum[:])
}
