package plan

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
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
			got, err := FindProject(probe(tc.cwd), tc.home)
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
			got, err := FindProject(probe(tc.cwd), tc.home)
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
	a, err := FindProject(probe(f.proj+"/a"), f.home)
	if err != nil {
		t.Fatal(err)
	}
	b, err := FindProject(probe(f.proj+"/b"), f.home)
	if err != nil {
		t.Fatal(err)
	}
	if a != b {
		t.Errorf("from two subdirectories: %+v and %+v", a, b)
	}
	other, err := FindProject(probe(f.root+"/other/app"), f.home)
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
	if _, err := FindProject(probe(f.root+"/home"), f.home); !errors.Is(err, ErrProject) {
		t.Fatalf("FindProject(parent of home) = %v; want ErrProject", err)
	}
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
		{"submodule: gitdir outside the project", func(t *testing.T, proj string) {
			gitRepo(t, proj+"/../super")
			mkdirs(t, proj+"/../super/.git/modules/app/hooks")
			writeFile(t, proj+"/../super/.git/modules/app/config", "")
			writeFile(t, proj+"/.git", "gitdir: ../super/.git/modules/app\n")
		}, []string{
			"bind rw $HOME/src/super/.git/modules/app -> $HOME/src/super/.git/modules/app (git dir of the worktree)",
			"bind ro $HOME/src/super/.git/modules/app/hooks -> $HOME/src/super/.git/modules/app/hooks (git hooks)",
			"bind ro $HOME/src/super/.git/modules/app/config -> $HOME/src/super/.git/modules/app/config (git config)",
			"bind ro $PROJ/.git -> $PROJ/.git (git dir link)",
		}},
		{"worktree gitdir outside its common dir", func(t *testing.T, proj string) {
			gitRepo(t, proj+"/../main")
			mkdirs(t, proj+"/../gitdirs/app")
			writeFile(t, proj+"/../gitdirs/app/commondir", proj+"/../main/.git\n")
			writeFile(t, proj+"/.git", "gitdir: "+proj+"/../gitdirs/app\n")
		}, []string{
			"bind rw $HOME/src/main/.git -> $HOME/src/main/.git (git dir of the worktree)",
			"bind ro $HOME/src/main/.git/hooks -> $HOME/src/main/.git/hooks (git hooks)",
			"bind ro $HOME/src/main/.git/config -> $HOME/src/main/.git/config (git config)",
			"bind ro $PROJ/.git -> $PROJ/.git (git dir link)",
			"bind rw $HOME/src/gitdirs/app -> $HOME/src/gitdirs/app (git dir of the worktree)",
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

func TestGitMountsRefuses(t *testing.T) {
	for name, setup := range map[string]func(t *testing.T, f *fixture){
		"symlinked .git": func(t *testing.T, f *fixture) {
			gitRepo(t, f.root+"/real")
			symlink(t, f.root+"/real/.git", f.proj+"/.git")
		},
		".git file without gitdir": func(t *testing.T, f *fixture) {
			writeFile(t, f.proj+"/.git", "not a link\n")
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

// TestGitMountsWorktree: a linked worktree's hooks and config live in the common dir
// of the main repository, outside the project, which is bound with the same
// protections; the worktree's own gitdir lies inside it.
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
		writeFile(t, main+"/.git/worktrees/app/commondir", "../..\n")
		writeFile(t, wt+"/.git", "gitdir: "+main+"/.git/worktrees/app\n")
	}
	gitdirs, err := filepath.Glob(main + "/.git/worktrees/*")
	if err != nil || len(gitdirs) != 1 {
		t.Fatalf("worktree gitdirs %v, %v", gitdirs, err)
	}
	writeFile(t, gitdirs[0]+"/config.worktree", "")

	ms, err := gitMounts(probe(wt), wt)
	if err != nil {
		t.Fatalf("gitMounts: %v", err)
	}
	equalLines(t, "mounts", mountLines(ms), f.expand(nil,
		"bind rw $ROOT/main/.git -> $ROOT/main/.git (git dir of the worktree)",
		"bind ro $ROOT/main/.git/hooks -> $ROOT/main/.git/hooks (git hooks)",
		"bind ro $ROOT/main/.git/config -> $ROOT/main/.git/config (git config)",
		"bind ro "+wt+"/.git -> "+wt+"/.git (git dir link)",
		"bind ro "+gitdirs[0]+"/config.worktree -> "+gitdirs[0]+"/config.worktree (git config)",
	))
}
