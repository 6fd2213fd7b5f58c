package planner

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/devsandbox/devsandbox/config"
	"github.com/devsandbox/devsandbox/isolator"
)

func TestFindProject(t *testing.T) {
	f := newFixture(t)
	gitRepo(t, f.proj)
	mkdirs(t, f.proj+"/sub/deep", f.root+"/work/plain/sub", f.root+"/wt")
	writeFile(t, f.root+"/wt/.git", "gitdir: /elsewhere\n")
	symlink(t, f.proj+"/sub", f.root+"/link-to-sub")
	symlink(t, f.home, f.root+"/home-link")

	for _, tc := range []struct {
		name, cwd, home, want string
	}{
		{"repo root", f.proj, f.home, f.proj},
		{"nearest ancestor with .git", f.proj + "/sub/deep", f.home, f.proj},
		{".git file (worktree)", f.root + "/wt", f.home, f.root + "/wt"},
		{"no .git: the working directory", f.root + "/work/plain/sub", f.home, f.root + "/work/plain/sub"},
		{"cwd through a symlink: the real path", f.root + "/link-to-sub", f.home, f.proj},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := FindProject(probe(tc.cwd), config.Host{Home: tc.home})
			if err != nil {
				t.Fatalf("FindProject: %v", err)
			}
			if got.Dir != tc.want {
				t.Errorf("Dir = %s, want %s", got.Dir, tc.want)
			}
			if wantName := filepath.Base(tc.want) + "-" + got.ID; got.Name != wantName {
				t.Errorf("Name = %s, want %s", got.Name, wantName)
			}
			if !regexp.MustCompile(`^[0-9a-f]{8}$`).MatchString(got.ID) {
				t.Errorf("ID = %q, want 8 hex digits", got.ID)
			}
		})
	}

	for _, tc := range []struct{ name, cwd, home string }{
		{"root", "/", f.home},
		{"home", f.home, f.home},
		{"home named through a symlink", f.home, f.root + "/home-link"},
		{"home reached through a symlink", f.root + "/home-link", f.home},
	} {
		t.Run("refuses "+tc.name, func(t *testing.T) {
			got, err := FindProject(probe(tc.cwd), config.Host{Home: tc.home})
			if !errors.Is(err, ErrProject) {
				t.Fatalf("FindProject = %+v, %v; want an error matching ErrProject", got, err)
			}
		})
	}
}

func TestFindProjectIDStable(t *testing.T) {
	f := newFixture(t)
	gitRepo(t, f.proj)
	mkdirs(t, f.proj+"/a", f.proj+"/b", f.root+"/other/app")
	a, err := FindProject(probe(f.proj+"/a"), config.Host{Home: f.home})
	if err != nil {
		t.Fatal(err)
	}
	b, err := FindProject(probe(f.proj+"/b"), config.Host{Home: f.home})
	if err != nil {
		t.Fatal(err)
	}
	if a != b {
		t.Errorf("from two subdirectories: %+v and %+v", a, b)
	}
	other, err := FindProject(probe(f.root+"/other/app"), config.Host{Home: f.home})
	if err != nil {
		t.Fatal(err)
	}
	if other.ID == a.ID || other.Name == a.Name {
		t.Errorf("two projects called app share an identity: %+v and %+v", a, other)
	}
}

// TestFindProjectHomeAncestor: a working directory above $HOME would become a project
// whose read-write bind covers the sandbox home (and hide_paths) with the real home.
func TestFindProjectHomeAncestor(t *testing.T) {
	f := newFixture(t)
	if _, err := FindProject(probe(f.root+"/home"), config.Host{Home: f.home}); !errors.Is(err, ErrProject) {
		t.Fatalf("FindProject(parent of home) = %v; want ErrProject", err)
	}
}

// gitMounts returns the mounts gitLayoutOf makes for the project at dir.
func gitMounts(pr Probe, dir string) ([]isolator.Mount, error) {
	l, err := gitLayoutOf(pr, dir, "/home/u")
	if err != nil {
		return nil, err
	}
	return l.mounts, nil
}

func TestGitMounts(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, proj string)
		want  []string
	}{
		{"not a repository", func(*testing.T, string) {}, nil},
		{"plain repository", func(t *testing.T, proj string) { gitRepo(t, proj) }, []string{
			"bind ro $PROJ/.git/hooks -> $PROJ/.git/hooks (git hooks)",
			"bind ro $PROJ/.git/config -> $PROJ/.git/config (git config)",
		}},
		{"no hooks dir", func(t *testing.T, proj string) {
			gitRepo(t, proj)
			if err := os.Remove(proj + "/.git/hooks"); err != nil {
				t.Fatal(err)
			}
		}, []string{
			"maskdir $PROJ/.git/hooks (git hooks)",
			"bind ro $PROJ/.git/config -> $PROJ/.git/config (git config)",
		}},
		{"submodule: its git dir in the superproject's", func(t *testing.T, proj string) {
			gitRepo(t, proj+"/..")
			gitRepo(t, proj+"/../.git/modules/app/..") // modules/app: HEAD, objects, refs, hooks, config
			writeFile(t, proj+"/../.git/modules/app/HEAD", "ref: refs/heads/main\n")
			mkdirs(t, proj+"/../.git/modules/app/hooks", proj+"/../.git/modules/app/objects", proj+"/../.git/modules/app/refs")
			writeFile(t, proj+"/../.git/modules/app/config", "[core]\n\tworktree = ../../../app\n")
			writeFile(t, proj+"/.git", "gitdir: ../.git/modules/app\n")
		}, []string{
			"bind rw $HOME/src/.git/modules/app -> $HOME/src/.git/modules/app (git dir of the worktree)",
			"bind ro $HOME/src/.git/modules/app/hooks -> $HOME/src/.git/modules/app/hooks (git hooks)",
			"bind ro $HOME/src/.git/modules/app/config -> $HOME/src/.git/modules/app/config (git config)",
			"bind ro $PROJ/.git -> $PROJ/.git (git dir link)",
		}},
		{"submodules of the project: hooks read-only, config watched, git dirs mount points", func(t *testing.T, proj string) {
			gitRepo(t, proj)
			for _, m := range []string{"lib/a", "lib/a/modules/b"} {
				mkdirs(t, proj+"/.git/modules/"+m+"/hooks")
				writeFile(t, proj+"/.git/modules/"+m+"/HEAD", "ref: refs/heads/main\n")
				writeFile(t, proj+"/.git/modules/"+m+"/config", "")
			}
		}, []string{
			"bind ro $PROJ/.git/hooks -> $PROJ/.git/hooks (git hooks)",
			"bind ro $PROJ/.git/config -> $PROJ/.git/config (git config)",
			"bind rw $PROJ/.git/modules -> $PROJ/.git/modules (holds a submodule's git dir)",
			"bind rw $PROJ/.git/modules/lib -> $PROJ/.git/modules/lib (holds a submodule's git dir)",
			"bind rw $PROJ/.git/modules/lib/a -> $PROJ/.git/modules/lib/a (holds a submodule's git dir)",
			"bind ro $PROJ/.git/modules/lib/a/hooks -> $PROJ/.git/modules/lib/a/hooks (git hooks)",
			"bind rw $PROJ/.git/modules/lib/a/modules -> $PROJ/.git/modules/lib/a/modules (holds a submodule's git dir)",
			"bind rw $PROJ/.git/modules/lib/a/modules/b -> $PROJ/.git/modules/lib/a/modules/b (holds a submodule's git dir)",
			"bind ro $PROJ/.git/modules/lib/a/modules/b/hooks -> $PROJ/.git/modules/lib/a/modules/b/hooks (git hooks)",
		}},
		{"include.path into the work tree", func(t *testing.T, proj string) {
			gitRepo(t, proj)
			writeFile(t, proj+"/.git/config", "[include]\n\tpath = ../conf/team.gitconfig\n[includeIf \"gitdir:/\"]\n\tpath = ~/shared.gitconfig\n")
			writeFile(t, proj+"/conf/team.gitconfig", "[include]\n\tpath = more.gitconfig\n")
			writeFile(t, proj+"/conf/more.gitconfig", "")
		}, []string{
			"bind ro $PROJ/.git/hooks -> $PROJ/.git/hooks (git hooks)",
			"bind ro $PROJ/.git/config -> $PROJ/.git/config (git config)",
			"bind rw $PROJ/conf -> $PROJ/conf (holds a file git on the host obeys)",
			"bind ro $PROJ/conf/team.gitconfig -> $PROJ/conf/team.gitconfig (included by git config)",
			"bind rw $PROJ/conf -> $PROJ/conf (holds a file git on the host obeys)",
			"bind ro $PROJ/conf/more.gitconfig -> $PROJ/conf/more.gitconfig (included by git config)",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			tc.setup(t, f.proj)
			ms, err := gitMounts(probe(f.proj), f.proj)
			if err != nil {
				t.Fatalf("gitMounts: %v", err)
			}
			equalLines(t, "mounts", mountLines(ms), f.expand(nil, tc.want...))
		})
	}
}

// A .git file may lead only where git itself would have put the git dir: anything
// else could have been written by a sandbox to have the run bind a directory of its
// choosing read-write.
func TestGitMountsRefuses(t *testing.T) {
	worktree := func(t *testing.T, f *fixture) string {
		gitRepo(t, f.root+"/main")
		admin := f.root + "/main/.git/worktrees/app"
		mkdirs(t, admin)
		writeFile(t, admin+"/HEAD", "ref: refs/heads/wt\n")
		writeFile(t, admin+"/commondir", "../..\n")
		writeFile(t, admin+"/gitdir", f.proj+"/.git\n")
		writeFile(t, f.proj+"/.git", "gitdir: "+admin+"\n")
		return admin
	}
	for name, setup := range map[string]func(t *testing.T, f *fixture){
		"symlinked .git": func(t *testing.T, f *fixture) {
			gitRepo(t, f.root+"/real")
			symlink(t, f.root+"/real/.git", f.proj+"/.git")
		},
		".git file without gitdir": func(t *testing.T, f *fixture) {
			writeFile(t, f.proj+"/.git", "not a link\n")
		},
		"gitdir to a directory that is no git dir": func(t *testing.T, f *fixture) {
			mkdirs(t, f.home+"/.config")
			writeFile(t, f.proj+"/.git", "gitdir: "+f.home+"/.config\n")
		},
		"gitdir to another repository": func(t *testing.T, f *fixture) {
			gitRepo(t, f.root+"/other")
			writeFile(t, f.proj+"/.git", "gitdir: "+f.root+"/other/.git\n")
		},
		"separate git dir whose core.worktree is elsewhere": func(t *testing.T, f *fixture) {
			gitRepo(t, f.root+"/sep")
			writeFile(t, f.root+"/sep/.git/config", "[core]\n\tworktree = "+f.root+"/elsewhere\n")
			writeFile(t, f.proj+"/.git", "gitdir: "+f.root+"/sep/.git\n")
		},
		"worktree commondir rewritten": func(t *testing.T, f *fixture) {
			admin := worktree(t, f)
			gitRepo(t, f.home+"/.config")
			writeFile(t, admin+"/commondir", f.home+"/.config/.git\n")
		},
		"worktree gitdir not naming the worktree back": func(t *testing.T, f *fixture) {
			admin := worktree(t, f)
			writeFile(t, admin+"/gitdir", f.root+"/elsewhere/.git\n")
		},
		"worktree git dir outside a worktrees/ directory": func(t *testing.T, f *fixture) {
			gitRepo(t, f.root+"/main")
			mkdirs(t, f.root+"/gitdirs/app")
			writeFile(t, f.root+"/gitdirs/app/HEAD", "ref: refs/heads/wt\n")
			writeFile(t, f.root+"/gitdirs/app/commondir", f.root+"/main/.git\n")
			writeFile(t, f.root+"/gitdirs/app/gitdir", f.proj+"/.git\n")
			writeFile(t, f.proj+"/.git", "gitdir: "+f.root+"/gitdirs/app\n")
		},
		"commondir in a plain repository": func(t *testing.T, f *fixture) {
			gitRepo(t, f.proj)
			writeFile(t, f.proj+"/.git/commondir", "../evil\n")
		},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			setup(t, f)
			ms, err := gitMounts(probe(f.proj), f.proj)
			if !errors.Is(err, ErrProject) {
				t.Fatalf("gitMounts = %v, %v; want an error matching ErrProject", mountLines(ms), err)
			}
			// Build refuses the project the same way.
			if p, _, err := f.tryBuild(f.load(t)); !errors.Is(err, ErrProject) {
				t.Fatalf("Build = %v, %v; want an error matching ErrProject", p, err)
			}
		})
	}
}

// A separate git dir is accepted when its core.worktree names the project.
func TestGitMountsSeparateGitDir(t *testing.T) {
	f := newFixture(t)
	gitRepo(t, f.root+"/sep")
	writeFile(t, f.root+"/sep/.git/config", "[core]\n\tworktree = "+f.proj+"\n")
	writeFile(t, f.proj+"/.git", "gitdir: "+f.root+"/sep/.git\n")
	ms, err := gitMounts(probe(f.proj), f.proj)
	if err != nil {
		t.Fatal(err)
	}
	equalLines(t, "mounts", mountLines(ms), f.expand(nil,
		"bind rw $ROOT/sep/.git -> $ROOT/sep/.git (git dir of the worktree)",
		"bind ro $ROOT/sep/.git/hooks -> $ROOT/sep/.git/hooks (git hooks)",
		"bind ro $ROOT/sep/.git/config -> $ROOT/sep/.git/config (git config)",
		"bind ro $PROJ/.git -> $PROJ/.git (git dir link)",
	))
}

// TestGitMountsWorktree: a linked worktree's hooks and config live in the common dir
// of the main repository, outside the project, which is bound with the same
// protections; the worktree's own gitdir lies inside it, its pointers read-only.
func TestGitMountsWorktree(t *testing.T) {
	f := newFixture(t)
	main, wt := f.root+"/main", f.proj
	if err := os.Remove(wt); err != nil { // git worktree add creates it
		t.Fatal(err)
	}
	if _, err := exec.LookPath("git"); err == nil {
		git := func(dir string, args ...string) {
			t.Helper()
			cmd := exec.Command("git", args...)
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
				"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("git %v: %v\n%s", args, err, out)
			}
		}
		mkdirs(t, main)
		git(main, "init", "-q")
		git(main, "commit", "-q", "--allow-empty", "-m", "init")
		git(main, "worktree", "add", "-q", "-b", "wt", wt)
		mkdirs(t, main+"/.git/hooks") // git init makes it unless templates are off
	} else {
		gitRepo(t, main)
		mkdirs(t, main+"/.git/worktrees/app", wt)
		writeFile(t, main+"/.git/worktrees/app/HEAD", "ref: refs/heads/wt\n")
		writeFile(t, main+"/.git/worktrees/app/commondir", "../..\n")
		writeFile(t, main+"/.git/worktrees/app/gitdir", wt+"/.git\n")
		writeFile(t, wt+"/.git", "gitdir: "+main+"/.git/worktrees/app\n")
	}
	gitdirs, err := filepath.Glob(main + "/.git/worktrees/*")
	if err != nil || len(gitdirs) != 1 {
		t.Fatalf("worktree gitdirs %v, %v", gitdirs, err)
	}
	writeFile(t, gitdirs[0]+"/config.worktree", "")
	w := gitdirs[0]

	l, err := gitLayoutOf(probe(wt), wt, f.home)
	if err != nil {
		t.Fatalf("gitLayoutOf: %v", err)
	}
	equalLines(t, "mounts", mountLines(l.mounts), f.expand(nil,
		"bind rw $ROOT/main/.git -> $ROOT/main/.git (git dir of the worktree)",
		"bind ro $ROOT/main/.git/hooks -> $ROOT/main/.git/hooks (git hooks)",
		"bind ro $ROOT/main/.git/config -> $ROOT/main/.git/config (git config)",
		"bind rw $ROOT/main/.git/worktrees -> $ROOT/main/.git/worktrees (holds linked worktrees' pointers)",
		"bind rw "+w+" -> "+w+" (a linked worktree's git dir)",
		"bind ro "+w+"/commondir -> "+w+"/commondir (a linked worktree's pointer)",
		"bind ro "+w+"/gitdir -> "+w+"/gitdir (a linked worktree's pointer)",
		"bind ro "+w+"/config.worktree -> "+w+"/config.worktree (a linked worktree's pointer)",
		"bind ro "+wt+"/.git -> "+wt+"/.git (git dir link)",
	))
	if want := "gitdir " + w + "\ncommondir " + main + "/.git\n"; l.pointers != want || l.dirs[0] != main+"/.git" || l.index != w+"/index" {
		t.Errorf("pointers %q, dirs %v, index %s", l.pointers, l.dirs, l.index)
	}
}

// The gitdir chain of a .git file is compared with the one the last run recorded: a
// chain that changed stops the run, naming the record to remove.
func TestGitPointersRecord(t *testing.T) {
	f := newFixture(t)
	gitRepo(t, f.root+"/main")
	admin := f.root + "/main/.git/worktrees/app"
	mkdirs(t, admin)
	writeFile(t, admin+"/HEAD", "ref: refs/heads/wt\n")
	writeFile(t, admin+"/commondir", "../..\n")
	writeFile(t, admin+"/gitdir", f.proj+"/.git\n")
	writeFile(t, f.proj+"/.git", "gitdir: "+admin+"\n")
	p, _, err := f.tryBuild(f.load(t))
	if err != nil {
		t.Fatal(err)
	}
	if want := "gitdir " + admin + "\ncommondir " + f.root + "/main/.git\n"; p.Git.Pointers != want || p.Git.Dirs[0] != f.root+"/main/.git" {
		t.Fatalf("Git %+v", p.Git)
	}
	writeFile(t, p.Git.PointerRecord, "gitdir /elsewhere\n")
	if _, _, err := f.tryBuild(f.load(t)); !errors.Is(err, ErrProject) || !strings.Contains(err.Error(), p.Git.PointerRecord) {
		t.Fatalf("a changed chain: %v", err)
	}
	writeFile(t, p.Git.PointerRecord, p.Git.Pointers)
	if _, _, err := f.tryBuild(f.load(t)); err != nil {
		t.Fatalf("the recorded chain: %v", err)
	}
}

// TestProjectInsideOwnState: a project that contains devsandbox's own configuration
// or state is refused, and so is one inside them: a sandbox of a project in the state
// root's locks directory (or a project's state directory) could replace the other
// projects' lock files and run marks, and prune would no longer see their runs.
func TestProjectInsideOwnState(t *testing.T) {
	for _, rel := range []string{"/.local/state/devsandbox/locks", "/.local/state/devsandbox/app-0123abcd/runs", "/.local/share/devsandbox", "/.config/devsandbox/x", "/.local"} {
		t.Run(rel, func(t *testing.T) {
			f := newFixture(t)
			f.proj = f.home + rel
			mkdirs(t, f.proj)
			_, _, err := f.tryBuild(f.load(t))
			if !errors.Is(err, ErrProject) {
				t.Fatalf("Build in %s = %v, want an ErrProject error", f.proj, err)
			}
		})
	}
}
