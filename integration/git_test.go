//go:build integration

package integration

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Guarantee 12 for git: nothing the sandbox writes makes git on the host run code,
// and no bind source comes from a pointer file the sandbox could write. Each test
// plants what a hostile agent would, then runs git on the host as people (and their
// shell prompts and editors) do, and looks for the planted command's marker.

// gitEnv is the identity git needs to commit, inside and outside.
var gitEnv = []string{"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@e", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@e"}

// requireGit skips without git on the host, and fails in CI.
func requireGit(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("git is required in CI")
		}
		t.Skip("git not installed")
	}
}

// hostGit runs git on the host as the test user in dir and returns its combined
// output and error.
func hostGit(t *testing.T, dir string, args ...string) (string, error) {
	t.Helper()
	cmd := command(t.Context(), dir, baseEnv(append(gitEnv, "GIT_CONFIG_NOSYSTEM=1", "GIT_ALLOW_PROTOCOL=file")...), args...)
	cmd.Path, cmd.Args = "/usr/bin/git", append([]string{"git"}, args...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// mustHostGit is hostGit that fails the test on an error.
func mustHostGit(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := hostGit(t, dir, args...)
	if err != nil {
		t.Fatalf("git %v in %s: %v\n%s", args, dir, err, out)
	}
	return out
}

// newRepo makes a real repository with one commit at rel below the scratch root.
func (p *project) newRepo(rel string) string {
	p.t.Helper()
	dir := p.path(rel)
	p.mkdir(rel)
	mustHostGit(p.t, dir, "init", "-q", "-b", "main")
	p.write(rel+"/f.txt", "one\n")
	mustHostGit(p.t, dir, "add", "f.txt")
	mustHostGit(p.t, dir, "commit", "-qm", "one")
	return dir
}

// fsmonitor is a core.fsmonitor value that leaves marker behind when git runs it.
func fsmonitor(marker string) string { return `touch ` + marker + `; false` }

// assertNotRun runs `git status` on the host in each dir, as a shell prompt would,
// and fails if the planted command ran.
func assertNotRun(t *testing.T, marker string, dirs ...string) {
	t.Helper()
	for _, d := range dirs {
		_, _ = hostGit(t, d, "status")
	}
	if _, err := os.Lstat(marker); err == nil {
		t.Fatalf("git on the host ran a command the sandbox planted (%s exists)", marker)
	}
}

// Finding 1: a nested repository with core.fsmonitor, made a gitlink of the project
// inside the sandbox, must not make `git status` on the host run it.
func TestNestedRepositoryGitlink(t *testing.T) {
	requireGit(t)
	forEachIsolator(t, func(t *testing.T, iso string) {
		p := newProject(t)
		p.newRepo("proj")
		marker := p.path("PWNED")
		r := run(t, p.dir, gitEnv, "", "--isolator="+iso, "--", "/bin/sh", "-c", `set -e
			mkdir -p vendor/lib && cd vendor/lib && git init -q && git commit -q --allow-empty -m lib
			git config core.fsmonitor '`+fsmonitor(marker)+`'
			cd ../.. && git update-index --add --cacheinfo 160000,$(git -C vendor/lib rev-parse HEAD),vendor/lib
			git commit -qm vendor && echo planted`)
		if !strings.Contains(r.stdout, "planted") {
			t.Fatalf("setup inside the sandbox:\n%s", r)
		}
		assertNotRun(t, marker, p.dir, p.path("proj/vendor/lib"))
		if !strings.Contains(r.stderr, "vendor/lib/.git") {
			t.Errorf("no warning names the nested repository:\n%s", r.stderr)
		}
	})
}

// Finding 4: a pointer file planted mid-run is quarantined while the run goes on,
// not when it ends: agents run for hours while editors poll git.
func TestGitPlantedDuringRun(t *testing.T) {
	requireGit(t)
	forEachIsolator(t, func(t *testing.T, iso string) {
		p := newProject(t)
		p.newRepo("proj")
		marker := p.path("PWNED")
		cmd := command(t.Context(), p.dir, baseEnv(), "--isolator="+iso, "--", "/bin/sh", "-c", `
			mkdir -p .git/evil && ln -s ../objects .git/evil/objects && ln -s ../refs .git/evil/refs && cp .git/HEAD .git/evil/HEAD
			printf '[include]\n\tpath = ../config\n[core]\n\tfsmonitor = "`+fsmonitor(marker)+`"\n' > .git/evil/config
			echo evil > .git/commondir && echo planted
			while [ ! -e .continue ]; do sleep 0.05; done`)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		stdout, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() {
			p.write("proj/.continue", "")
			_ = cmd.Wait()
		}()
		newLineReader(t, stdout).waitFor("planted")
		deadline := time.Now().Add(5 * time.Second)
		for {
			if _, err := os.Lstat(p.path("proj/.git/commondir")); os.IsNotExist(err) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("a commondir planted mid-run was still there 5 s later")
			}
			time.Sleep(50 * time.Millisecond)
		}
		assertNotRun(t, marker, p.dir)
	})
}

// Finding 2a: in a linked worktree the common dir is writable; a rewritten
// .git/worktrees/<wt>/commondir must never make the next run bind where it points.
func TestWorktreeCommondirNotABindSource(t *testing.T) {
	requireGit(t)
	forEachIsolator(t, func(t *testing.T, iso string) {
		p := newProject(t)
		main := p.newRepo("main")
		wt := p.path("wt")
		mustHostGit(t, main, "worktree", "add", "-q", wt, "-b", "wt")
		t.Cleanup(func() { p.forget(wt) })
		p.mkdir("bait")
		admin := filepath.Join(main, ".git/worktrees/wt")
		// Inside: the sandbox cannot point the worktree elsewhere.
		r := run(t, wt, nil, "", "--isolator="+iso, "--", "/bin/sh", "-c",
			`echo `+p.path("bait")+` > `+admin+`/commondir 2>/dev/null; cat `+admin+`/commondir`)
		if got, _ := os.ReadFile(filepath.Join(admin, "commondir")); strings.TrimSpace(string(got)) != "../.." {
			t.Fatalf("the sandbox rewrote %s/commondir to %q:\n%s", admin, got, r)
		}
		// Planted all the same (by an older version, say): the next run refuses it.
		if err := os.WriteFile(filepath.Join(admin, "commondir"), []byte(p.path("bait")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		p.assertBaitRefused(iso, wt, "a planted commondir", "commondir")
	})
}

// Finding 2b: a .git file naming a directory outside the project is refused, not
// bound as a submodule's git dir; planted inside, it is quarantined at once.
func TestGitfileNotABindSource(t *testing.T) {
	requireGit(t)
	forEachIsolator(t, func(t *testing.T, iso string) {
		p := newProject(t)
		p.newRepo("proj")
		p.mkdir("bait")
		r := p.sandbox(iso, nil, `mkdir -p src && echo "gitdir: `+p.path("bait")+`" > src/.git && echo planted`)
		if !strings.Contains(r.stdout, "planted") {
			t.Fatalf("setup inside the sandbox:\n%s", r)
		}
		if _, err := os.Lstat(p.path("proj/src/.git")); err == nil {
			t.Errorf("a .git file pointing out of the project survived the run:\n%s", r)
		}
		p.write("proj/src/.git", "gitdir: "+p.path("bait")+"\n")
		p.assertBaitRefused(iso, p.path("proj/src"), "a planted .git file", "src/.git")
	})
}

// assertBaitRefused runs, in dir, a command that writes into the scratch root's bait
// directory, which what (a planted git pointer) names; the run must stop (125) with
// a message holding name, and write nothing there.
func (p *project) assertBaitRefused(iso, dir, what, name string) {
	t := p.t
	t.Helper()
	r := run(t, dir, nil, "", "--isolator="+iso, "--", "/bin/sh", "-c", `touch `+p.path("bait/written")+`; echo ran`)
	if _, err := os.Lstat(p.path("bait/written")); err == nil {
		t.Fatalf("%s made the run bind %s read-write:\n%s", what, p.path("bait"), r)
	}
	if r.code != 125 || !strings.Contains(r.stderr, name) {
		t.Fatalf("%s did not stop the run:\n%s", what, r)
	}
}

// Finding 3: pointer and config files the exit check did not cover.
func TestGitPointerFiles(t *testing.T) {
	requireGit(t)
	forEachIsolator(t, func(t *testing.T, iso string) {
		// From a linked worktree, the main repository's commondir.
		t.Run("main commondir from a worktree", func(t *testing.T) {
			p := newProject(t)
			main := p.newRepo("main")
			wt := p.path("wt")
			mustHostGit(t, main, "worktree", "add", "-q", wt, "-b", "wt")
			t.Cleanup(func() { p.forget(wt) })
			marker := p.path("PWNED")
			g := filepath.Join(main, ".git")
			run(t, wt, nil, "", "--isolator="+iso, "--", "/bin/sh", "-c", `
				mkdir -p `+g+`/evil && ln -s ../objects `+g+`/evil/objects && ln -s ../refs `+g+`/evil/refs && cp `+g+`/HEAD `+g+`/evil/HEAD
				printf '[include]\n\tpath = ../config\n[core]\n\tfsmonitor = "`+fsmonitor(marker)+`"\n' > `+g+`/evil/config
				echo evil > `+g+`/commondir`)
			assertNotRun(t, marker, main, wt)
		})
		// From the main repository, a worktree's commondir (also read-only mode).
		for _, flags := range [][]string{nil, {"--read-only"}} {
			t.Run("worktree commondir from main "+strings.Join(flags, ""), func(t *testing.T) {
				p := newProject(t)
				p.newRepo("proj")
				wt := p.path("wt")
				mustHostGit(t, p.dir, "worktree", "add", "-q", wt, "-b", "wt")
				t.Cleanup(func() { p.forget(wt) })
				marker := p.path("PWNED")
				p.sandbox(iso, flags, `
					mkdir -p .git/evil && ln -s ../objects .git/evil/objects && ln -s ../refs .git/evil/refs && cp .git/HEAD .git/evil/HEAD
					printf '[include]\n\tpath = ../config\n[core]\n\tfsmonitor = "`+fsmonitor(marker)+`"\n' > .git/evil/config
					echo ../../evil > .git/worktrees/wt/commondir`)
				assertNotRun(t, marker, wt, p.dir)
			})
		}
		// config.worktree, read when extensions.worktreeConfig is on.
		t.Run("config.worktree", func(t *testing.T) {
			p := newProject(t)
			p.newRepo("proj")
			mustHostGit(t, p.dir, "config", "extensions.worktreeConfig", "true")
			marker := p.path("PWNED")
			p.sandbox(iso, nil, `printf '[core]\n\tfsmonitor = "`+fsmonitor(marker)+`"\n' > .git/config.worktree`)
			assertNotRun(t, marker, p.dir)
		})
		// An include.path of .git/config that names a file in the work tree.
		t.Run("include.path in the work tree", func(t *testing.T) {
			p := newProject(t)
			p.newRepo("proj")
			mustHostGit(t, p.dir, "config", "include.path", "../team.gitconfig")
			marker := p.path("PWNED")
			p.sandbox(iso, nil, `printf '[core]\n\tfsmonitor = "`+fsmonitor(marker)+`"\n' > team.gitconfig`)
			assertNotRun(t, marker, p.dir)
		})
	})
}

// What git writes for ordinary work keeps working inside: commit, branch, rebase,
// worktree add, submodule update and gc, with nothing quarantined and a repository
// the host's git still reads.
func TestGitWorksInside(t *testing.T) {
	requireGit(t)
	forEachIsolatorOf(t, withRootless(isolators()), func(t *testing.T, iso string) {
		p := newProject(t)
		src := p.newRepo("subsrc")
		p.newRepo("proj")
		mustHostGit(t, p.dir, "-c", "protocol.file.allow=always", "submodule", "add", "-q", src, "sub")
		mustHostGit(t, p.dir, "commit", "-qm", "sub")
		// A newer submodule commit the submodule already has: update needs no network.
		p.write("subsrc/f.txt", "two\n")
		mustHostGit(t, src, "commit", "-qam", "two")
		mustHostGit(t, p.path("proj/sub"), "fetch", "-q")
		head := strings.TrimSpace(mustHostGit(t, src, "rev-parse", "HEAD"))
		mustHostGit(t, p.dir, "update-index", "--cacheinfo", "160000,"+head+",sub")
		mustHostGit(t, p.dir, "commit", "-qm", "bump sub")
		r := run(t, p.dir, gitEnv, "", "--isolator="+iso, "--", "/bin/sh", "-c", `set -e
			git submodule update -q
			echo a >> f.txt && git commit -qam a
			git branch topic && git checkout -q topic && echo b > b.txt && git add b.txt && git commit -qm b
			git checkout -q main && echo c > c.txt && git add c.txt && git commit -qm c
			git checkout -q topic && git rebase -q main && git checkout -q main
			git worktree add -q -b topic2 wt
			git -C wt commit -q --allow-empty -m in-worktree
			git gc -q
			git -C sub rev-parse HEAD && echo all-ok`)
		if r.code != 0 || !strings.Contains(r.stdout, head) || !strings.Contains(r.stdout, "all-ok") {
			t.Fatalf("ordinary git work inside the sandbox:\n%s", r)
		}
		if strings.Contains(r.stderr, "quarantine") || strings.Contains(r.stderr, "moved to") {
			t.Errorf("ordinary git work was quarantined:\n%s", r.stderr)
		}
		for _, d := range []string{p.dir, p.path("proj/wt"), p.path("proj/sub")} {
			mustHostGit(t, d, "status", "--short")
		}
		if got := mustHostGit(t, p.dir, "log", "--oneline", "topic"); !strings.Contains(got, " b") {
			t.Errorf("the rebased branch on the host:\n%s", got)
		}
	})
}

// A directory the sandbox makes unreadable hides what is below it from the scan for new
// repositories: the run says so rather than stay silent.
func TestWatchSaysWhatItCannotScan(t *testing.T) {
	requireBwrap(t)
	p := newProject(t)
	r := p.sandbox("bwrap", nil, `mkdir -p locked/lib && cd locked/lib && git init -q && cd ../.. && chmod 000 locked`)
	t.Cleanup(func() { _ = os.Chmod(p.path("proj/locked"), 0o755) })
	if r.code != 0 || !strings.Contains(r.stderr, "could not look for repositories") {
		t.Fatalf("an unreadable directory made during the run:\n%s", r)
	}
}
