package watch

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/devsandbox/devsandbox/isolator"
)

// fixture is a project with a plain repository, and a Plan watching it.
type fixture struct {
	t     *testing.T
	proj  string
	state string
	p     *isolator.Plan
	mu    sync.Mutex
	warns []string
}

func newFixture(t *testing.T) *fixture {
	root := t.TempDir()
	f := &fixture{t: t, proj: filepath.Join(root, "proj"), state: filepath.Join(root, "state")}
	f.write(".git/HEAD", "ref: refs/heads/main\n")
	f.write(".git/config", "[core]\n\tbare = false\n")
	f.mkdir(".git/hooks", ".git/objects", ".git/refs")
	f.write(".git/hooks/pre-commit.sample", "#!/bin/sh\n")
	f.p = &isolator.Plan{
		Project: isolator.Project{Dir: f.proj},
		Git: isolator.GitWatch{
			Dirs: []string{f.path(".git")}, Index: f.path(".git/index"),
			ScanMask: []string{".env"}, ScanSkip: []string{".git", "node_modules"}, ScanCache: filepath.Join(f.state, "cache"),
			Quarantine: filepath.Join(f.state, "quarantine"),
		},
	}
	return f
}

func (f *fixture) path(rel string) string { return filepath.Join(f.proj, rel) }

func (f *fixture) write(rel, content string) {
	f.t.Helper()
	if err := os.MkdirAll(filepath.Dir(f.path(rel)), 0o755); err != nil {
		f.t.Fatal(err)
	}
	if err := os.WriteFile(f.path(rel), []byte(content), 0o644); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) mkdir(rels ...string) {
	for _, r := range rels {
		if err := os.MkdirAll(f.path(r), 0o755); err != nil {
			f.t.Fatal(err)
		}
	}
}

// repo makes a git dir at rel with the given config.
func (f *fixture) repo(rel, config string) {
	f.write(rel+"/HEAD", "ref: refs/heads/main\n")
	f.write(rel+"/config", config)
	f.mkdir(rel+"/objects", rel+"/refs", rel+"/hooks")
	f.write(rel+"/hooks/post-update.sample", "#!/bin/sh\n")
}

func (f *fixture) start() *Watcher {
	return Start(f.p, func(m string) {
		f.mu.Lock()
		f.warns = append(f.warns, m)
		f.mu.Unlock()
	})
}

func (f *fixture) exists(rel string) bool {
	_, err := os.Lstat(f.path(rel))
	return err == nil
}

// read returns the content of the regular file at rel. Anything else (a FIFO the
// sandbox left, which the watch should have moved away) is named, never opened: an
// open of a FIFO would wait for a writer, and the test with it, until go test's
// timeout.
func (f *fixture) read(rel string) string {
	fi, err := os.Lstat(f.path(rel))
	if err != nil {
		return ""
	}
	if !fi.Mode().IsRegular() {
		return fmt.Sprintf("<not a regular file: %v>", fi.Mode())
	}
	b, _ := os.ReadFile(f.path(rel))
	return string(b)
}

// warned reports whether some warning holds every one of subs.
func (f *fixture) warned(subs ...string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, w := range f.warns {
		all := true
		for _, s := range subs {
			all = all && strings.Contains(w, s)
		}
		if all {
			return true
		}
	}
	return false
}

// What a sandbox plants where the host's git looks is quarantined, and a config that
// had a version gets it back; what ordinary git work writes stays.
func TestWatchGitDir(t *testing.T) {
	f := newFixture(t)
	f.repo(".git/modules/lib", "[core]\n\tworktree = ../../../lib\n")
	f.repo(".git/modules/old", "[core]\n\tworktree = ../../../old\n")
	w := f.start()

	f.write(".git/commondir", "evil\n")                                       // a pointer in a plain repository
	f.write(".git/config.worktree", "[core]\n\tfsmonitor = touch /tmp/x\n")   // a new config.worktree
	f.write(".git/modules/lib/config", "[core]\n\tworktree = ../../../lib\n") // rewritten as is (submodule update)
	f.write(".git/modules/old/config", "[core]\n\tworktree = ../../../old\n[core]\n\thooksPath = /tmp\n")
	f.write(".git/modules/old/hooks/post-checkout", "#!/bin/sh\n")                                           // a hook
	f.repo(".git/modules/new", "[core]\n\tworktree = ../../../new\n[remote \"origin\"]\n\turl = /src/new\n") // submodule init
	f.repo(".git/modules/evil", "[alias]\n\tst = !evil\n")                                                   // a new git dir that is not
	f.repo(".git/worktrees/wt", "")                                                                          // git worktree add
	f.write(".git/worktrees/wt/commondir", "../..\n")
	f.write(".git/worktrees/wt/gitdir", f.path("wt/.git")+"\n")
	f.repo(".git/worktrees/bad", "")
	f.write(".git/worktrees/bad/commondir", "../../evil\n")
	w.Stop()

	for _, gone := range []string{".git/commondir", ".git/config.worktree", ".git/modules/old/hooks/post-checkout", ".git/modules/evil", ".git/worktrees/bad"} {
		if f.exists(gone) {
			t.Errorf("%s was not quarantined", gone)
		}
		if !f.warned(f.path(gone), "moved to "+filepath.Join(f.state, "quarantine")) {
			t.Errorf("no warning for %s: %q", gone, f.warns)
		}
	}
	for _, kept := range []string{".git/modules/lib/config", ".git/modules/new/config", ".git/worktrees/wt/commondir"} {
		if !f.exists(kept) {
			t.Errorf("%s was quarantined: %q", kept, f.warns)
		}
	}
	if got := f.read(".git/modules/old/config"); got != "[core]\n\tworktree = ../../../old\n" {
		t.Errorf("the submodule's config was not put back: %q", got)
	}
	if !f.warned("core.hookspath", "back in place") {
		t.Errorf("no warning naming the variable: %q", f.warns)
	}
}

// Nested repositories and gitdir files below the project are checked as they appear,
// and the known ones when they change.
func TestWatchNested(t *testing.T) {
	f := newFixture(t)
	f.repo("vendor/old/.git", "[alias]\n\tco = checkout\n") // the user's, with an alias
	f.p.Git.Nested = []string{f.path("vendor/old/.git")}
	w := f.start()

	f.write("vendor/old/.git/config", "[alias]\n\tco = checkout\n[user]\n\tname = x\n") // a safe change
	f.repo("vendor/lib/.git", "[core]\n\tfsmonitor = touch /tmp/x\n")                   // finding 1
	f.repo("vendor/clone/.git", "[remote \"origin\"]\n\turl = /src\n")                  // git clone
	f.write("src/.git", "gitdir: "+filepath.Dir(f.proj)+"/elsewhere\n")                 // finding 2b
	f.write("node_modules/x/.git", "gitdir: /home/u/.config\n")                         // not scanned
	w.Stop()

	if f.exists("vendor/lib/.git") || f.exists("src/.git") {
		t.Errorf("planted .git entries survived: %q", f.warns)
	}
	if !f.exists("vendor/clone/.git") || !f.exists("vendor/old/.git/config") || f.read("vendor/old/.git/config") == "" {
		t.Errorf("ordinary repositories were quarantined: %q", f.warns)
	}
	if !f.exists("node_modules/x/.git") {
		t.Error("a directory the scan skips was scanned") // found only through a gitlink
	}
	if !f.warned(f.path("vendor/lib/.git"), "core.fsmonitor") || !f.warned(f.path("src/.git"), "outside the project") {
		t.Errorf("warnings: %q", f.warns)
	}
}

// Tripwires are reported once, or quarantined each time when asked.
func TestWatchTripwires(t *testing.T) {
	f := newFixture(t)
	f.p.Tripwires = []isolator.Tripwire{
		{Path: f.path(".vscode/tasks.json"), Why: "tasks"},
		{Path: f.path("team.gitconfig"), Why: "included", Quarantine: true},
	}
	w := f.start()
	f.write(".vscode/tasks.json", "{}")
	f.write("team.gitconfig", "[core]\n\tfsmonitor = x\n")
	w.Stop()
	if !f.exists(".vscode/tasks.json") || !f.warned(f.path(".vscode/tasks.json"), "tasks") {
		t.Errorf("tasks.json: %q", f.warns)
	}
	if f.exists("team.gitconfig") || !f.warned(f.path("team.gitconfig"), "moved to") {
		t.Errorf("team.gitconfig: %q", f.warns)
	}
}

// A pattern tripwire reports every new name it matches in its directory, once, and
// not one there at the start.
func TestWatchPatternTripwire(t *testing.T) {
	f := newFixture(t)
	f.write("mise.prod.toml", "[env]\n")
	f.p.Tripwires = []isolator.Tripwire{{Path: f.path("mise.*.toml"), Pattern: true, Why: "mise"}}
	w := f.start()
	f.write("mise.staging.toml", "[env]\n")
	f.write("mise.toml.bak", "[env]\n")
	w.check(false)
	f.write("mise.ci.local.toml", "[env]\n")
	w.Stop()
	var got []string
	for _, m := range f.warns {
		got = append(got, strings.TrimPrefix(strings.SplitN(m, ":", 2)[0], "the sandbox created "+f.proj+"/"))
	}
	if want := []string{"mise.staging.toml", "mise.ci.local.toml"}; !slices.Equal(got, want) {
		t.Errorf("reported %q, want %q (%q)", got, want, f.warns)
	}
}

// A gitlink the sandbox adds to the index makes its directory checked, even below a
// directory the scan skips.
func TestWatchGitlinks(t *testing.T) {
	requireGit(t)
	f := newFixture(t)
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = f.proj
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	os.RemoveAll(f.path(".git"))
	git("init", "-q")
	w := f.start()
	f.repo("node_modules/x/.git", "[core]\n\tfsmonitor = touch /tmp/x\n")
	git("update-index", "--add", "--cacheinfo", "160000,"+strings.Repeat("1", 40)+",node_modules/x")
	w.Stop()
	if f.exists("node_modules/x/.git") || !f.warned(f.path("node_modules/x/.git"), "core.fsmonitor") {
		t.Errorf("a gitlinked repository below node_modules: %q", f.warns)
	}
}

// The index reader finds gitlinks in every index version git writes.
func TestGitlinks(t *testing.T) {
	requireGit(t)
	dir := t.TempDir()
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git("init", "-q")
	for _, f := range []string{"a.txt", "dir/b.txt", "dir/sub/c.txt"} {
		os.MkdirAll(filepath.Join(dir, filepath.Dir(f)), 0o755)
		os.WriteFile(filepath.Join(dir, f), []byte(f), 0o644)
	}
	git("add", ".")
	git("update-index", "--add", "--cacheinfo", "160000,"+strings.Repeat("1", 40)+",dir/sub/lib")
	git("update-index", "--add", "--cacheinfo", "160000,"+strings.Repeat("2", 40)+",vendor/x")
	os.WriteFile(filepath.Join(dir, "new.txt"), []byte("n"), 0o644)
	git("add", "-N", "new.txt") // intent to add: an extended flag (version 3)
	for _, v := range []string{"2", "3", "4"} {
		git("update-index", "--index-version", v)
		b, err := os.ReadFile(filepath.Join(dir, ".git/index"))
		if err != nil {
			t.Fatal(err)
		}
		got, err := gitlinks(b, 20)
		if err != nil || strings.Join(got, " ") != "dir/sub/lib vendor/x" {
			t.Errorf("version %s: %q, %v", v, got, err)
		}
	}
	if _, err := gitlinks([]byte("DIRC\x00\x00\x00\x02\x00\x00\x00\x05"), 20); err == nil {
		t.Error("a truncated index read without error")
	}
}

// The project's own .git file (a linked worktree's, naming a git dir outside the
// project) is the host's: it is not taken for one the sandbox made.
func TestWatchOwnGitfile(t *testing.T) {
	f := newFixture(t)
	os.RemoveAll(f.path(".git"))
	main := filepath.Join(filepath.Dir(f.proj), "main/.git")
	f.write("../main/.git/HEAD", "ref: refs/heads/main\n")
	f.write(".git", "gitdir: "+main+"/worktrees/proj\n")
	f.p.Git.Dirs = []string{main}
	w := f.start()
	w.Stop()
	if !f.exists(".git") || len(f.warns) > 0 {
		t.Fatalf("the project's own .git file was taken for the sandbox's: %q", f.warns)
	}
}

// A read-only path is skipped only while it is the file mounted: renaming its
// directory away and making a new one in its place does not hide what is planted
// there. A FIFO where a config was does not block the watch.
func TestWatchReadOnlyMovedAway(t *testing.T) {
	f := newFixture(t)
	f.repo(".git/modules/x", "[core]\n\tworktree = ../../../x\n")
	hooks := f.path(".git/modules/x/hooks")
	f.p.Mounts = []isolator.Mount{{Kind: isolator.Bind, Source: hooks, Dest: hooks, ReadOnly: true}}
	w := f.start()
	if err := os.Rename(f.path(".git/modules"), f.path(".git/modules.old")); err != nil {
		t.Fatal(err)
	}
	f.repo(".git/modules/x", "[core]\n\tworktree = ../../../x\n")
	f.write(".git/modules/x/hooks/post-checkout", "#!/bin/sh\n")
	if err := os.Remove(f.path(".git/config")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(f.path(".git/config"), 0o644); err != nil {
		t.Fatal(err)
	}
	w.Stop()
	if f.exists(".git/modules/x/hooks/post-checkout") || !f.warned(f.path(".git/modules/x/hooks/post-checkout")) {
		t.Errorf("a hook planted in place of a read-only directory: %q", f.warns)
	}
	if got := f.read(".git/config"); got != "[core]\n\tbare = false\n" || !f.warned(f.path(".git/config"), "not a regular file") {
		t.Errorf("a FIFO config: %q, %q", got, f.warns)
	}
}

// requireGit skips without git, and fails in CI.
func requireGit(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("git is required in CI")
		}
		t.Skip("git not installed")
	}
}

// The files host tools read in every directory (Plan.Subdir) that the sandbox creates
// below a sub-directory are found by the scan and reported once each; those there at
// launch are not, unless replaced; the top directory's (Tripwires), names in another
// place and skipped directories are not the scan's to report.
func TestWatchSubdirFiles(t *testing.T) {
	f := newFixture(t)
	f.p.Subdir = isolator.SubdirFiles{Names: []string{"rust-toolchain.toml", ".tool-versions", "mise.toml", ".config/mise/config.toml", "mise.*.toml"}, Why: "toolchains"}
	f.write("a/rust-toolchain.toml", "[toolchain]\n")
	f.write("b/versions", "nodejs 22\n")
	if err := os.Symlink("versions", f.path("b/.tool-versions")); err != nil {
		t.Fatal(err)
	}
	f.p.Subdir.Present = []string{f.path("a/rust-toolchain.toml"), f.path("b/.tool-versions")}
	w := f.start()
	f.write("c/d/mise.toml", "[env]\n")
	f.write("c/.config/mise/config.toml", "[env]\n")
	f.write("docs/config.toml", "")
	f.write("mise.toml", "[env]\n")
	f.write("node_modules/x/.tool-versions", "")
	w.check(true)
	if err := os.Remove(f.path("b/.tool-versions")); err != nil {
		t.Fatal(err)
	}
	f.write("b/.tool-versions", "nodejs path:./evil\n")
	f.write("c/d/mise.ci.toml", "[env]\n")
	w.Stop()
	var got []string
	for _, m := range f.warns {
		got = append(got, strings.TrimPrefix(strings.SplitN(m, ":", 2)[0], "the sandbox created "+f.proj+"/"))
	}
	if want := []string{"c/.config/mise/config.toml", "c/d/mise.toml", "b/.tool-versions", "c/d/mise.ci.toml"}; !slices.Equal(got, want) {
		t.Errorf("reported %q, want %q (%q)", got, want, f.warns)
	}
}
