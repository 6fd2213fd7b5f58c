package planner

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/isolator/gitconfig"
)

// gitLayout is what the project's repository needs: the mounts that protect its
// metadata, the git dirs the sandbox can write (for package watch), and the gitdir
// chain a .git file leads to.
type gitLayout struct {
	mounts    []isolator.Mount
	tripwires []isolator.Tripwire
	dirs      []string // git dirs the sandbox can write
	index     string
	pointers  string // the gitdir chain of a .git file ("" for a plain repository)
}

// gitLayoutOf reads the project's repository. The hooks and config files of the
// project's git dir are read-only; .git itself stays writable (git writes its refs,
// objects and index there). A .git file (a linked worktree, a submodule) names a git
// dir that may lie outside the project and is then bound read-write: no such bind
// source is taken from a file the sandbox could have written without checking that it
// is what git itself makes (see worktreeCommon and separateGitDir).
func gitLayoutOf(pr Probe, project, home string) (*gitLayout, error) {
	l := &gitLayout{}
	dotgit := filepath.Join(project, ".git")
	fi, err := pr.Lstat(dotgit)
	if err != nil {
		return l, nil // not a repository: a .git made inside is checked as it appears (package watch)
	}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return nil, fmt.Errorf("%w: %s is a symlink; devsandbox cannot protect the hooks of a repository it reaches through a symlink: replace it with the directory it points to or a `gitdir:` file", ErrProject, dotgit)
	case fi.IsDir():
		for _, name := range []string{"commondir", "gitdir"} {
			if p := filepath.Join(dotgit, name); pr.exists(p) {
				return nil, fmt.Errorf("%w: %s exists in a plain repository: git on the host would take its config and hooks from where it points. Remove it (review it first: a sandboxed program may have planted it)", ErrProject, p)
			}
		}
		l.dirs, l.index = []string{dotgit}, filepath.Join(dotgit, "index")
		return l, l.protect(pr, dotgit, false, project, home)
	}
	gitdir, err := readGitfile(pr, dotgit, project)
	if err != nil {
		return nil, err
	}
	// The link itself is read-only: pointed elsewhere, it would bring its own hooks.
	link := isolator.Mount{Kind: isolator.Bind, Source: dotgit, Dest: dotgit, ReadOnly: true, Why: "git dir link"}
	l.index = filepath.Join(gitdir, "index")
	if pr.exists(filepath.Join(gitdir, "commondir")) {
		common, err := worktreeCommon(pr, dotgit, gitdir)
		if err != nil {
			return nil, err
		}
		l.dirs, l.pointers = []string{common}, "gitdir "+gitdir+"\ncommondir "+common+"\n"
		if err := l.protect(pr, common, !isolator.Within(common, project), project, home); err != nil {
			return nil, err
		}
		l.mounts = append(l.mounts, link)
		return l, nil
	}
	if err := separateGitDir(pr, dotgit, gitdir, project); err != nil {
		return nil, err
	}
	l.dirs, l.pointers = []string{gitdir}, "gitdir "+gitdir+"\n"
	if err := l.protect(pr, gitdir, !isolator.Within(gitdir, project), project, home); err != nil {
		return nil, err
	}
	l.mounts = append(l.mounts, link)
	return l, nil
}

// readGitfile returns the real path of the git dir a .git file names.
func readGitfile(pr Probe, dotgit, project string) (string, error) {
	b, err := readRegular(pr, dotgit)
	if err != nil {
		return "", fmt.Errorf("reading %s: %w", dotgit, err)
	}
	line := strings.TrimSpace(string(b))
	if !strings.HasPrefix(line, "gitdir:") {
		return "", fmt.Errorf("%w: %s is a file but not a `gitdir:` link", ErrProject, dotgit)
	}
	gitdir := strings.TrimSpace(strings.TrimPrefix(line, "gitdir:"))
	if !filepath.IsAbs(gitdir) {
		gitdir = filepath.Join(project, gitdir)
	}
	real, err := pr.EvalSymlinks(gitdir)
	if err != nil {
		return "", fmt.Errorf("%w: resolving the git dir %s names: %w", ErrProject, dotgit, err)
	}
	if !looksLikeGitDir(pr, real) {
		return "", fmt.Errorf("%w: %s names %s, which is not a git dir (no HEAD, objects and refs). Remove %s (review it first: a sandboxed program may have written it)", ErrProject, dotgit, real, dotgit)
	}
	return real, nil
}

// looksLikeGitDir reports whether dir holds what git requires of a git dir. A linked
// worktree's git dir has its objects and refs in the common dir.
func looksLikeGitDir(pr Probe, dir string) bool {
	if fi, err := pr.Lstat(filepath.Join(dir, "HEAD")); err != nil || !fi.Mode().IsRegular() {
		return false
	}
	if pr.exists(filepath.Join(dir, "commondir")) {
		return true
	}
	return pr.isDir(filepath.Join(dir, "objects")) && pr.isDir(filepath.Join(dir, "refs"))
}

// worktreeCommon checks a linked worktree's git dir and returns its common dir. git
// worktree add makes <common>/worktrees/<name> with a commondir of "../.." and a
// gitdir naming the worktree's .git file: anything else was not made by git, and
// would have the run bind a directory of someone's choosing read-write.
func worktreeCommon(pr Probe, dotgit, gitdir string) (string, error) {
	refuse := func(file, why string) error {
		return fmt.Errorf("%w: %s %s which is not what git makes for the linked worktree %s: a sandboxed program may have rewritten it, to have a later run mount another directory writable. Review it, then repair it with `git worktree repair` run from the main repository", ErrProject, file, why, filepath.Dir(dotgit))
	}
	if filepath.Base(filepath.Dir(gitdir)) != "worktrees" {
		return "", refuse(dotgit, "names "+gitdir+", not a directory below a repository's worktrees/,")
	}
	common := filepath.Dir(filepath.Dir(gitdir))
	b, err := readRegular(pr, filepath.Join(gitdir, "commondir"))
	if err != nil {
		return "", fmt.Errorf("reading %s: %w", filepath.Join(gitdir, "commondir"), err)
	}
	c := strings.TrimSpace(string(b))
	if c != "../.." && !sameDir(pr, c, common) {
		return "", refuse(filepath.Join(gitdir, "commondir"), "names "+c+" instead of "+common+", the repository holding it,")
	}
	back, err := readRegular(pr, filepath.Join(gitdir, "gitdir"))
	t := strings.TrimSpace(string(back))
	if err == nil && !filepath.IsAbs(t) {
		t = filepath.Join(gitdir, t)
	}
	if err != nil || !sameDir(pr, filepath.Dir(filepath.Clean(t)), filepath.Dir(dotgit)) {
		return "", refuse(filepath.Join(gitdir, "gitdir"), "does not name "+dotgit+" back,")
	}
	if !looksLikeGitDir(pr, common) || pr.exists(filepath.Join(common, "commondir")) {
		return "", refuse(filepath.Join(gitdir, "commondir"), "leads to "+common+", not a repository's git dir,")
	}
	return common, nil
}

// separateGitDir checks the git dir a .git file names when it is not a linked
// worktree's: inside the project; a submodule's (<repository>/.git/modules/..., the
// repository's work tree holding the project); or one whose core.worktree names the
// project (git init --separate-git-dir with core.worktree set).
func separateGitDir(pr Probe, dotgit, gitdir, project string) error {
	if isolator.Within(gitdir, project) {
		return nil
	}
	worktree := ""
	if b, err := readRegular(pr, filepath.Join(gitdir, "config")); err == nil {
		if es, err := gitconfig.Parse(b); err == nil {
			if v := gitconfig.Values(es, "core.worktree"); len(v) > 0 {
				worktree = v[len(v)-1]
				if !filepath.IsAbs(worktree) {
					worktree = filepath.Join(gitdir, worktree)
				}
			}
		}
	}
	if worktree != "" {
		if sameDir(pr, worktree, project) {
			return nil
		}
		return fmt.Errorf("%w: %s names %s as its git dir, whose core.worktree is %s, not this project: a sandboxed program may have written it. Remove %s (review it first)", ErrProject, dotgit, gitdir, worktree, dotgit)
	}
	for a := filepath.Dir(project); a != "/" && a != "."; a = filepath.Dir(a) {
		if isolator.Within(gitdir, filepath.Join(a, ".git", "modules")) && pr.isDir(filepath.Join(a, ".git")) {
			return nil
		}
	}
	return fmt.Errorf("%w: %s names %s as its git dir, outside the project, and it is neither a submodule's git dir (<repository>/.git/modules/...) nor one whose core.worktree is this project: devsandbox cannot tell it from a directory a sandboxed program pointed it at, and would mount it writable. If it is yours (git init --separate-git-dir), run `git --git-dir=%s config core.worktree %s`; else remove %s (review it first)", ErrProject, dotgit, gitdir, gitdir, project, dotgit)
}

// sameDir reports whether a and b name the same directory.
func sameDir(pr Probe, a, b string) bool {
	ra, err1 := pr.EvalSymlinks(a)
	rb, err2 := pr.EvalSymlinks(b)
	return err1 == nil && err2 == nil && ra == rb
}

// protect adds the mounts that protect one git dir: itself when it lies outside the
// project (bind), then read-only hooks and config, the pointer files of its linked
// worktrees, its submodules' hooks and lefthook remote configs, and the files its
// config includes from where the sandbox can write.
func (l *gitLayout) protect(pr Probe, dir string, bind bool, project, home string) error {
	if bind {
		l.mounts = append(l.mounts, isolator.Mount{Kind: isolator.Bind, Source: dir, Dest: dir, Why: "git dir of the worktree"})
	}
	// A symlinked hooks dir or config cannot be protected: the read-only mount would
	// land on the link's target and the link itself could be replaced.
	for _, name := range []string{"hooks", "config"} {
		if fi, err := pr.Lstat(filepath.Join(dir, name)); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
			return fmt.Errorf("%w: %s is a symlink; devsandbox cannot protect a symlinked git %s from the sandbox. Replace it with the real %s (for shared hooks, set core.hooksPath to a directory in the project instead)",
				ErrProject, filepath.Join(dir, name), name, map[string]string{"hooks": "directory", "config": "file"}[name])
		}
	}
	l.hooks(pr, dir)
	for _, name := range []string{"config", "config.worktree"} {
		cfg := filepath.Join(dir, name)
		switch {
		case pr.exists(cfg):
			l.mounts = append(l.mounts, isolator.Mount{Kind: isolator.Bind, Source: cfg, Dest: cfg, ReadOnly: true, Why: isolator.WhyGitConfig})
			l.includes(pr, cfg, project, home, 0)
		case name == "config":
			// None yet: an empty read-only one, so none (with core.hooksPath) can be written.
			l.mounts = append(l.mounts, isolator.Mount{Kind: isolator.MaskFile, Dest: cfg, Why: isolator.WhyGitConfig})
		}
	}
	l.worktrees(pr, dir)
	if err := l.lefthookRemotes(pr, dir); err != nil {
		return err
	}
	// Submodules keep their git dirs below modules/. Their hooks are read-only; their
	// config is not, as git submodule update rewrites it (core.worktree): package
	// watch checks every change to it. Each git dir, and every directory from modules/
	// down to it, is a mount point (bound first, parents before children), so none can
	// be renamed away with its read-only parts and replaced by a writable copy.
	modules := filepath.Join(dir, "modules")
	bound := map[string]bool{}
	for _, sub := range findModules(pr, modules, 0) {
		var chain []string
		for d := sub; isolator.Within(d, modules) && !bound[d]; d = filepath.Dir(d) {
			chain = append(chain, d)
		}
		for i := len(chain) - 1; i >= 0; i-- {
			bound[chain[i]] = true
			l.mounts = append(l.mounts, isolator.Mount{Kind: isolator.Bind, Source: chain[i], Dest: chain[i], Why: "holds a submodule's git dir"})
		}
		l.hooks(pr, sub)
		// lefthook run inside a submodule keeps its remotes in the submodule's git dir.
		if err := l.lefthookRemotes(pr, sub); err != nil {
			return err
		}
		if cw := filepath.Join(sub, "config.worktree"); pr.exists(cw) {
			l.mounts = append(l.mounts, isolator.Mount{Kind: isolator.Bind, Source: cw, Dest: cw, ReadOnly: true, Why: isolator.WhyGitConfig})
		}
	}
	return nil
}

// hooks makes dir's hooks read-only (an empty read-only directory when there are none).
func (l *gitLayout) hooks(pr Probe, dir string) {
	hooks := filepath.Join(dir, "hooks")
	if fi, err := pr.Lstat(hooks); err == nil && fi.IsDir() {
		l.mounts = append(l.mounts, isolator.Mount{Kind: isolator.Bind, Source: hooks, Dest: hooks, ReadOnly: true, Why: "git hooks"})
		return
	}
	if !pr.exists(hooks) {
		l.mounts = append(l.mounts, isolator.Mount{Kind: isolator.MaskDir, Dest: hooks, Why: "git hooks"})
	}
}

// lefthookRemotesWhy says why lefthook's remote configs are protected.
const lefthookRemotesWhy = "lefthook merges the configs of its remotes there into the hooks the host's next commit runs, and runs git in each clone when it fetches again"

// lefthookRemotes protects lefthook's clones of the repositories a config's remotes
// name (<git dir>/info/lefthook-remotes/<repo>, lefthook's Repository.RemotesFolder):
// lefthook merges the configs there into the hooks every commit runs, without
// fetching again unless a remote asks for it, and a fetch runs git in the clone,
// which obeys the clone's own .git/config (core.fsmonitor). They lie inside .git, so no
// diff shows a change. Present, the directory is read-only and info a mount point, so
// neither can be renamed away and replaced (info's other files, exclude, stay
// writable); absent, one the sandbox makes is quarantined (lefthook install makes it,
// but also writes the hooks, read-only here: it fails inside all the same). A symlink
// at either cannot be protected (a bind would land on its target) and stops the run.
func (l *gitLayout) lefthookRemotes(pr Probe, dir string) error {
	info := filepath.Join(dir, "info")
	remotes := filepath.Join(info, "lefthook-remotes")
	tripwire := isolator.Tripwire{Path: remotes, Why: lefthookRemotesWhy, Quarantine: true}
	ifi, err := pr.Lstat(info)
	if err != nil {
		l.tripwires = append(l.tripwires, tripwire)
		return nil
	}
	if ifi.Mode()&fs.ModeSymlink != 0 {
		if pr.exists(remotes) {
			return fmt.Errorf("%w: %s is a symlink; devsandbox cannot protect lefthook's remote configs in %s from the sandbox. Replace it with the directory it points to",
				ErrProject, info, remotes)
		}
		l.tripwires = append(l.tripwires, tripwire)
		return nil
	}
	fi, err := pr.Lstat(remotes)
	switch {
	case err != nil:
		l.tripwires = append(l.tripwires, tripwire)
	case fi.Mode()&fs.ModeSymlink != 0:
		return fmt.Errorf("%w: %s is a symlink; devsandbox cannot protect lefthook's remote configs from the sandbox, and lefthook on the host runs what they name at each commit. Review where it points (a sandboxed program may have planted it), then remove it and run lefthook install on the host",
			ErrProject, remotes)
	case fi.IsDir() && ifi.IsDir():
		l.mounts = append(l.mounts,
			isolator.Mount{Kind: isolator.Bind, Source: info, Dest: info, Why: "holds lefthook's remote configs"},
			isolator.Mount{Kind: isolator.Bind, Source: remotes, Dest: remotes, ReadOnly: true, Why: "lefthook's remote configs"})
	}
	return nil
}

// worktrees makes the pointer files of dir's linked worktrees read-only, and each
// worktree's git dir and worktrees/ itself mount points, so neither can be renamed
// away and replaced by one with other pointers.
func (l *gitLayout) worktrees(pr Probe, dir string) {
	wts := filepath.Join(dir, "worktrees")
	ents, err := pr.ReadDir(wts)
	if err != nil || len(ents) == 0 {
		return
	}
	l.mounts = append(l.mounts, isolator.Mount{Kind: isolator.Bind, Source: wts, Dest: wts, Why: "holds linked worktrees' pointers"})
	for _, e := range ents {
		w := filepath.Join(wts, e.Name())
		if fi, err := pr.Lstat(w); err != nil || !fi.IsDir() {
			continue
		}
		l.mounts = append(l.mounts, isolator.Mount{Kind: isolator.Bind, Source: w, Dest: w, Why: "a linked worktree's git dir"})
		for _, name := range []string{"commondir", "gitdir", "config.worktree"} {
			if p := filepath.Join(w, name); pr.exists(p) {
				l.mounts = append(l.mounts, isolator.Mount{Kind: isolator.Bind, Source: p, Dest: p, ReadOnly: true, Why: "a linked worktree's pointer"})
			}
		}
	}
}

// findModules returns the git dirs (holding HEAD) below dir, submodules named by a
// path included, and those of their own submodules.
func findModules(pr Probe, dir string, depth int) []string {
	ents, err := pr.ReadDir(dir)
	if err != nil || depth > 8 {
		return nil
	}
	var out []string
	for _, e := range ents {
		p := filepath.Join(dir, e.Name())
		if fi, err := pr.Lstat(p); err != nil || !fi.IsDir() {
			continue
		}
		if pr.exists(filepath.Join(p, "HEAD")) {
			out = append(out, p)
			out = append(out, findModules(pr, filepath.Join(p, "modules"), depth+1)...)
			continue
		}
		out = append(out, findModules(pr, p, depth+1)...)
	}
	return out
}

// includes protects the files a config includes (include.path, includeIf.*.path)
// from the project: read-only when they exist, else a tripwire that quarantines one
// the sandbox makes. Relative paths are relative to the including file, as git reads
// them; included files are followed to git's depth.
func (l *gitLayout) includes(pr Probe, cfg, project, home string, depth int) {
	b, err := readRegular(pr, cfg)
	if err != nil || depth > 10 {
		return
	}
	es, err := gitconfig.Parse(b)
	if err != nil {
		return
	}
	for _, e := range es {
		if e.Name != "path" || (e.Section != "include" && e.Section != "includeif") {
			continue
		}
		p := e.Value
		switch {
		case strings.HasPrefix(p, "~/"):
			p = filepath.Join(home, p[2:])
		case !filepath.IsAbs(p):
			p = filepath.Join(filepath.Dir(cfg), p)
		}
		p = filepath.Clean(p)
		if !isolator.Within(p, project) {
			continue
		}
		if !pr.exists(p) {
			l.tripwires = append(l.tripwires, isolator.Tripwire{Path: p, Why: "the git config " + cfg + " includes it: git on the host would obey it", Quarantine: true})
			continue
		}
		l.mounts = append(l.mounts, pinnedFile(p, project, isolator.WhyGitInclude)...)
		l.includes(pr, p, project, home, depth+1)
	}
}

// pinnedDirWhy is the Why of pinnedFile's mount points.
const pinnedDirWhy = "holds a file git on the host obeys"

// pinnedFile returns the mounts that make p, a file in the project, read-only, and
// each directory between the project and it a mount point, so that none can be
// renamed away and replaced. The mount points are read-write here: the builder gives
// each the mode its directory has without it (mountBuilder.addPinned).
func pinnedFile(p, project, why string) []isolator.Mount {
	var dirs []string
	for d := filepath.Dir(p); d != project && isolator.Within(d, project); d = filepath.Dir(d) {
		dirs = append(dirs, d)
	}
	var ms []isolator.Mount
	for i := len(dirs) - 1; i >= 0; i-- {
		ms = append(ms, isolator.Mount{Kind: isolator.Bind, Source: dirs[i], Dest: dirs[i], Why: pinnedDirWhy})
	}
	return append(ms, isolator.Mount{Kind: isolator.Bind, Source: p, Dest: p, ReadOnly: true, Why: why})
}

// readRegular reads p when it is a regular file, not a symlink: a FIFO a sandbox left
// in its place, or swapped in after a check, must not hang the launch (readWritable).
func readRegular(pr Probe, p string) ([]byte, error) {
	return pr.readWritable(p, false)
}
