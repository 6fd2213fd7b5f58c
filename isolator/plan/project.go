package plan

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/devsandbox/devsandbox/isolator"
)

// ErrProject is wrapped by errors about the project directory itself.
var ErrProject = errors.New("unusable project directory")

// FindProject returns the project for the working directory: the nearest ancestor
// holding a .git (the git top level), else the working directory itself.
func FindProject(pr Probe, home string) (isolator.Project, error) {
	cwd, err := pr.EvalSymlinks(pr.Cwd)
	if err != nil {
		return isolator.Project{}, fmt.Errorf("resolving the working directory %s: %w", pr.Cwd, err)
	}
	dir := cwd
	for d := cwd; ; d = filepath.Dir(d) {
		if _, err := pr.Lstat(filepath.Join(d, ".git")); err == nil {
			dir = d
			break
		}
		if d == "/" {
			break
		}
	}
	realHome, err := pr.EvalSymlinks(home)
	if err != nil {
		realHome = home
	}
	switch {
	case dir == "/":
		return isolator.Project{}, fmt.Errorf("%w: / is the root directory; run devsandbox from a project directory (or a subdirectory of one)", ErrProject)
	case dir == realHome:
		return isolator.Project{}, fmt.Errorf("%w: %s is your home directory; run devsandbox from a project directory (or a subdirectory of one)", ErrProject, dir)
	case isolator.Within(realHome, dir):
		return isolator.Project{}, fmt.Errorf("%w: %s contains your home directory; run devsandbox from a project directory (or a subdirectory of one)", ErrProject, dir)
	}
	sum := sha256.Sum256([]byte(dir))
	id := hex.EncodeToString(sum[:4])
	return isolator.Project{Dir: dir, ID: id, Name: filepath.Base(dir) + "-" + id}, nil
}

// gitMounts protects the repository metadata: .git stays writable, but hooks and config
// are read-only so a sandboxed agent cannot plant code the host runs later. A linked
// worktree (or submodule) has a .git file naming its gitdir, which is bound with its
// common dir and the same protections.
func gitMounts(pr Probe, project string) ([]isolator.Mount, error) {
	dotgit := filepath.Join(project, ".git")
	fi, err := pr.Lstat(dotgit)
	if err != nil {
		return nil, nil // not a repository
	}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return nil, fmt.Errorf("%w: %s is a symlink; devsandbox cannot protect the hooks of a repository it reaches through a symlink: replace it with the directory it points to or a `gitdir:` file", ErrProject, dotgit)
	case fi.IsDir():
		return protectGitDir(pr, dotgit, false)
	}
	b, err := pr.ReadFile(dotgit)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", dotgit, err)
	}
	// The gitdir link itself is read-only: pointed elsewhere, it would bring its own hooks.
	linkMount := isolator.Mount{Kind: isolator.Bind, Source: dotgit, Dest: dotgit, ReadOnly: true, Why: "git dir link"}
	line := strings.TrimSpace(string(b))
	if !strings.HasPrefix(line, "gitdir:") {
		return nil, fmt.Errorf("%w: %s is a file but not a `gitdir:` link", ErrProject, dotgit)
	}
	gitdir := strings.TrimSpace(strings.TrimPrefix(line, "gitdir:"))
	if !filepath.IsAbs(gitdir) {
		gitdir = filepath.Join(project, gitdir)
	}
	if gitdir, err = pr.EvalSymlinks(gitdir); err != nil {
		return nil, fmt.Errorf("resolving the gitdir named in %s: %w", dotgit, err)
	}
	c, err := pr.ReadFile(filepath.Join(gitdir, "commondir"))
	if err != nil {
		// A submodule: the gitdir is a whole repository of its own.
		ms, err := protectGitDir(pr, gitdir, !isolator.Within(gitdir, project))
		return append(ms, linkMount), err
	}
	// A linked worktree: hooks and config live in the common dir.
	common := strings.TrimSpace(string(c))
	if !filepath.IsAbs(common) {
		common = filepath.Join(gitdir, common)
	}
	if common, err = pr.EvalSymlinks(common); err != nil {
		return nil, fmt.Errorf("resolving the common dir of %s: %w", gitdir, err)
	}
	ms, err := protectGitDir(pr, common, !isolator.Within(common, project))
	if err != nil {
		return nil, err
	}
	ms = append(ms, linkMount)
	if !isolator.Within(gitdir, project) && !isolator.Within(gitdir, common) {
		ms = append(ms, isolator.Mount{Kind: isolator.Bind, Source: gitdir, Dest: gitdir, Why: "git dir of the worktree"})
	}
	if p := filepath.Join(gitdir, "config.worktree"); pr.exists(p) {
		ms = append(ms, isolator.Mount{Kind: isolator.Bind, Source: p, Dest: p, ReadOnly: true, Why: "git config"})
	}
	return ms, nil
}

// protectGitDir returns the mounts for one git dir: itself when it lies outside the
// project (bind), then read-only hooks and config.
func protectGitDir(pr Probe, dir string, bind bool) ([]isolator.Mount, error) {
	var ms []isolator.Mount
	if bind {
		ms = append(ms, isolator.Mount{Kind: isolator.Bind, Source: dir, Dest: dir, Why: "git dir of the worktree"})
	}
	// A symlinked hooks dir or config cannot be protected: the read-only mount would
	// land on the link's target and the link itself could be replaced.
	for _, name := range []string{"hooks", "config"} {
		if fi, err := pr.Lstat(filepath.Join(dir, name)); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
			return nil, fmt.Errorf("%w: %s is a symlink; devsandbox cannot protect a symlinked git %s from the sandbox. Replace it with the real %s (for shared hooks, set core.hooksPath to a directory in the project instead)",
				ErrProject, filepath.Join(dir, name), name, map[string]string{"hooks": "directory", "config": "file"}[name])
		}
	}
	hooks := filepath.Join(dir, "hooks")
	if pr.isDir(hooks) {
		ms = append(ms, isolator.Mount{Kind: isolator.Bind, Source: hooks, Dest: hooks, ReadOnly: true, Why: "git hooks"})
	} else {
		// No hooks dir yet: an empty read-only one, so none can be created.
		ms = append(ms, isolator.Mount{Kind: isolator.MaskDir, Dest: hooks, Why: "git hooks"})
	}
	for _, name := range []string{"config", "config.worktree"} {
		cfg := filepath.Join(dir, name)
		switch {
		case pr.exists(cfg):
			ms = append(ms, isolator.Mount{Kind: isolator.Bind, Source: cfg, Dest: cfg, ReadOnly: true, Why: "git config"})
		case name == "config":
			// None yet: an empty read-only one, so none (with core.hooksPath) can be written.
			ms = append(ms, isolator.Mount{Kind: isolator.MaskFile, Dest: cfg, Why: "git config"})
		}
	}
	// Submodules keep their repositories (hooks and config included) below modules/.
	if ents, err := pr.ReadDir(filepath.Join(dir, "modules")); err == nil {
		for _, e := range ents {
			sub := filepath.Join(dir, "modules", e.Name())
			if e.IsDir() && pr.exists(filepath.Join(sub, "HEAD")) {
				sm, err := protectGitDir(pr, sub, false)
				if err != nil {
					return nil, err
				}
				ms = append(ms, sm...)
			}
		}
	}
	return ms, nil
}
