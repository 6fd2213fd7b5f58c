package planner

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/devsandbox/devsandbox/config"
	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/isolator/gitconfig"
	"github.com/devsandbox/devsandbox/tools"
)

// mountBuilder accumulates the ordered mount list of a Plan.
type mountBuilder struct {
	pr   Probe
	home string
	// sys is the system view; while sysAhead is set, it is being worked out ahead
	// (SystemHead) and view waits for it.
	sys      isolator.SystemView
	sysAhead func() (isolator.SystemView, error)
	sysErr   error
	mounts   []isolator.Mount
	// sshProxyCommand is set in the proxy egress modes (see tools.Host.ProxyCommand).
	sshProxyCommand string
	// hidden are the hide_paths; a tool binding exactly at one is dropped, one below
	// an unmasked one masks it first. maskedHide are those masked.
	hidden, maskedHide map[string]bool
	hiddenOrder        []string
	// base is the project's data directory; privateDirs are host directories Run
	// creates before mounting; warns are for people.
	base        string
	privateDirs []string
	warns       []string
	// protected are the paths no bind may expose; userBinds index the user's binds in
	// mounts (see sources.go).
	protected []protected
	userBinds []int
	// from names a configured entry in errors (entryFrom); nil: by its key alone.
	from func(key, value string) string
	// git is the project's repository layout, once protectProject ran.
	git *gitLayout
	// anchored are the directories bound onto themselves above masks (anchor.go).
	anchored map[string]bool
	// hostFiles are the project-relative names host tools run or trust
	// (hostExecutedNames).
	hostFiles []string
	// yarnTripwires are the missing files yarn rc files name (protectYarnNamed).
	yarnTripwires []isolator.Tripwire
	// yarnWarns are protectYarnNamed's, given after the project scan; yarnPinned
	// the files and directories it made read-only.
	yarnWarns  []string
	yarnPinned map[string]bool
	// yarnRC are the rc file names the host's YARN_RC_FILENAME adds (yarnEnv.rc).
	yarnRC []string
	// yarnRun are the project-relative files the host's YARN_YARN_PATH and
	// YARN_PLUGINS name (yarnEnv.run, yarnEnv.top): the linked directories on the
	// way to them are kept as an rc file's are (protectYarnLinkedDirs).
	yarnRun []string
}

func (b *mountBuilder) add(m isolator.Mount) { b.mounts = append(b.mounts, m) }

// homeRel returns p relative to the host home, or "" when p is not below it.
func (b *mountBuilder) homeRel(p string) string {
	if strings.HasPrefix(p, b.home+"/") {
		return strings.TrimPrefix(p, b.home+"/")
	}
	return ""
}

// hide masks each hide path that is visible in the sandbox; it runs after the user's
// binds, which never undo a hide. The host home itself is not visible, so a path below
// it is masked when it exists in the sandbox home or a bind exposes it; other paths are
// masked when they exist on the host and are visible. A hide path holding the project
// is skipped: masking it would hide the project itself. Paths under the home are
// home-relative, so every isolator masks them in its own home; where the project or a
// bind shows one at its host path too, atBothHomes repeats the mask there.
func (b *mountBuilder) hide(paths []string, project string) error {
	b.hidden, b.maskedHide, b.hiddenOrder = map[string]bool{}, map[string]bool{}, paths
	for _, p := range paths {
		b.hidden[p] = true
		if isolator.Within(project, p) {
			continue
		}
		// What decides is the host: a path the host has is masked (below the home,
		// where the host's is not visible anyway, in case a bind exposes it), so the
		// view does not change with what earlier sessions left in the sandbox home.
		// Tool bindings below a hidden path add its mask themselves (see tools).
		rel := b.homeRel(p)
		if rel == "" && !b.visible(p) {
			continue
		}
		fi, err := b.pr.Lstat(p)
		if err := b.anchor(p, "sandbox.hide_paths", err == nil); err != nil {
			return err
		}
		if err != nil {
			continue
		}
		m := isolator.Mount{Kind: isolator.MaskFile, Why: "sandbox.hide_paths"}
		if fi.IsDir() {
			m.Kind = isolator.MaskDir
		}
		if rel != "" {
			m.HomeRel = rel
		} else {
			m.Dest = p
		}
		b.add(m)
		b.maskedHide[p] = true
	}
	return nil
}

// maskAbove masks, as an empty directory, a hidden path under the home above target
// that is not masked yet: a tool binding below it (ssh's generated ~/.ssh/config)
// then shows alone there, whatever the sandbox home holds, and the view stays the same
// from one run to the next.
func (b *mountBuilder) maskAbove(target string) {
	for _, h := range b.hiddenOrder {
		if rel := b.homeRel(h); rel != "" && !b.maskedHide[h] && target != h && isolator.Within(target, h) {
			b.add(isolator.Mount{Kind: isolator.MaskDir, HomeRel: rel, Why: "sandbox.hide_paths"})
			b.maskedHide[h] = true
		}
	}
}

// tools adds the bindings of every enabled tool and returns the env they contribute.
// A binding whose source is, or is reached through, a symlink is left out with a
// warning: a link in a tool's directory may have been planted by a sandbox, and a bind
// follows it on the host (see toolSource).
func (b *mountBuilder) tools(enabled []tools.Tool, th tools.Host, h config.Host) (map[string]isolator.EnvVar, error) {
	env := map[string]isolator.EnvVar{}
	for _, t := range enabled {
		for _, bd := range t.Bindings(th) {
			m := isolator.Mount{Source: bd.Source, Dest: bd.Dest, HomeRel: bd.HomeRelativeDest, Why: "tool " + t.Name}
			if b.hidden[m.Target(b.home)] {
				continue // the user hid exactly this path: the hide wins over the tool
			}
			if bd.Content == nil && bd.Mode != tools.Own && bd.Mode != tools.Tmpfs && !b.toolSource(t.Name, bd) {
				continue
			}
			b.maskAbove(m.Target(b.home))
			switch {
			case bd.Content != nil:
				m.Kind, m.Content, m.Source = isolator.Data, bd.Content, ""
			case bd.Mode == tools.Mask:
				m.Kind = isolator.MaskFile
				if b.pr.isDir(bd.Source) {
					m.Kind = isolator.MaskDir
				}
			case bd.Mode == tools.Tmpfs:
				m.Kind = isolator.TmpDir
			case bd.Mode == tools.Own:
				m.Kind, m.Source = isolator.Bind, b.ownDir(t.Name, m.Target(b.home))
				b.privateDirs = append(b.privateDirs, m.Source)
			default:
				m.Kind, m.ReadOnly, m.Optional = isolator.Bind, bd.Mode == tools.RO, bd.Optional
				switch {
				case bd.Create:
					m.Optional = false
					b.privateDirs = append(b.privateDirs, bd.Source)
				case !b.pr.exists(bd.Source) && bd.Optional:
					continue
				case !b.pr.exists(bd.Source):
					return nil, fmt.Errorf("%w: tool %s needs %s, which does not exist; create it or set tools.%s.enabled = false", ErrConfig, t.Name, bd.Source, t.Name)
				}
			}
			b.add(m)
		}
		if t.Warnings != nil {
			for _, w := range t.Warnings(th) {
				b.warns = append(b.warns, "tool "+t.Name+": "+w)
			}
		}
		for _, n := range t.Env {
			if v, ok := h.Vars[n]; ok {
				env[n] = isolator.EnvVar{Name: n, Value: v, FromHost: true, HomeRel: homeRel(v, h.Home)}
			}
		}
		if t.EnvSet != nil {
			for n, v := range t.EnvSet(th) {
				env[n] = isolator.EnvVar{Name: n, Value: v}
			}
		}
	}
	return env, nil
}

// toolSource reports whether a tool binding's source may be bound: neither it nor a
// directory above it (below the home, or below / outside it) is a symlink. A link there
// is either the user's (a dotfile manager's) or planted by a sandbox in a directory it
// could write, and a bind would follow either on the host; it is left out with a
// warning naming the fix. A user who wants the target writes it in config, where its
// resolved path is held to every mask (see bindUser).
func (b *mountBuilder) toolSource(tool string, bd tools.Binding) bool {
	root := "/"
	if isolator.Within(bd.Source, b.home) {
		root = b.home
	}
	link := isolator.SymlinkIn(bd.Source, root, b.pr.Lstat)
	if link == "" {
		return true
	}
	b.warns = append(b.warns, fmt.Sprintf("tool %s: %s is a symlink; %s is not bound into the sandbox (a bind would follow a link a sandboxed program may have planted). Review the link; to bind its target anyway, name it in sandbox.ro_binds or sandbox.host_mounts", tool, link, bd.Source))
	return false
}

// ownDir is the host directory backing a tool's own per-project directory at the
// in-sandbox path dst (see tools.Own): in the project's data directory, never visible
// to the sandbox but through this bind.
func (b *mountBuilder) ownDir(tool, dst string) string {
	sum := sha256.Sum256([]byte(dst))
	return filepath.Join(b.base, "tools", tool+"-"+hex.EncodeToString(sum[:4]))
}

// project adds the project itself: read-write, or read-only with its writable dirs
// and .git read-write.
func (b *mountBuilder) project(dir string, sb config.Sandbox) error {
	if !sb.ReadOnly {
		b.add(isolator.Mount{Kind: isolator.Bind, Source: dir, Dest: dir, Why: "project"})
	} else {
		b.add(isolator.Mount{Kind: isolator.Bind, Source: dir, Dest: dir, ReadOnly: true, Why: "project (read-only)"})
	}
	for _, w := range sb.WritableDirs {
		if !sb.ReadOnly {
			break
		}
		p := filepath.Join(dir, w)
		fi, err := b.pr.Lstat(p)
		real, rerr := b.pr.EvalSymlinks(p)
		if err != nil || !fi.IsDir() || rerr != nil || real != p {
			what := "sandbox.writable_dirs"
			if b.from != nil {
				what = b.from(what, w)
			}
			return fmt.Errorf("%w: %s: %s is not a directory of the project (symlinks, also in a parent, are not accepted); create it in the project", ErrConfig, what, p)
		}
		b.add(isolator.Mount{Kind: isolator.Bind, Source: p, Dest: p, Why: "sandbox.writable_dirs"})
	}
	// .git is a mount point in every mode: a mount point cannot be renamed or removed,
	// so `mv .git old && mkdir -p .git/hooks` cannot carry the read-only hooks away.
	if fi, err := b.pr.Lstat(filepath.Join(dir, ".git")); err == nil && fi.IsDir() {
		g := filepath.Join(dir, ".git")
		b.add(isolator.Mount{Kind: isolator.Bind, Source: g, Dest: g, Why: "git dir"})
	}
	return nil
}

// protectProject adds the git protections and the read-only project files host tools
// run or obey; it runs after every bind that could cover them.
func (b *mountBuilder) protectProject(dir string) error {
	l, err := gitLayoutOf(b.pr, dir, b.home)
	if err != nil {
		return err
	}
	b.git = l
	b.addPinned(l.mounts)
	if cf := filepath.Join(dir, ".devsandbox.toml"); b.pr.exists(cf) && !b.behindMask(cf) {
		b.add(isolator.Mount{Kind: isolator.Bind, Source: cf, Dest: cf, ReadOnly: true, Why: "project config"})
	}
	parents := map[string]bool{}
	for _, f := range hostExecutedFiles(b.pr, dir, b.hostFiles) {
		if len(b.yarnRun) > 0 && b.yarnRunNamed(f, dir) && b.linkOnWay(f, dir) {
			// A release or plugin the host's environment names, behind a linked
			// directory: kept as an rc file's is (the link's directory read-only,
			// the file pinned where it leads), not bound through the link.
			if err := b.protectYarnPath(f, dir, dir, false); err != nil {
				return err
			}
			continue
		}
		// The directory holding it is a mount point too, so it cannot be renamed away
		// and replaced by one holding a planted file.
		if p := filepath.Dir(f); p != dir && !parents[p] {
			parents[p] = true
			b.addMountPoint(p, parentWhy)
		}
		if err := refuseLinkedProtected(b.pr, f, dir); err != nil {
			return err
		}
		if !b.behindMask(f) {
			b.add(isolator.Mount{Kind: isolator.Bind, Source: f, Dest: f, ReadOnly: true, Why: "run by tools on the host"})
		}
		if base, yml, ok := b.yarnRCBase(f); ok && base == dir {
			if err := b.protectYarnNamed(f, base, yml, dir); err != nil {
				return err
			}
		}
	}
	for _, rel := range b.yarnRun {
		// yarn resolves a relative one from the directory it runs in: the top
		// directory's is walked here, a sub-directory's is a subdir name.
		if err := b.protectYarnLinkedDirs(filepath.Join(dir, rel), dir, dir); err != nil {
			return err
		}
	}
	if len(l.dirs) == 0 {
		return nil
	}
	if hp := configPath(b.pr, l.dirs[0], dir, b.home, "core.hooksPath", false); hp != "" && b.pr.isDir(hp) && !b.behindMask(hp) {
		if scripts := huskyScripts(b.pr, hp, dir); scripts != "" && !b.behindMask(scripts) {
			b.add(isolator.Mount{Kind: isolator.Bind, Source: scripts, Dest: scripts, ReadOnly: true, Why: "husky's hook scripts (git core.hooksPath is its _ directory)"})
		}
		b.add(isolator.Mount{Kind: isolator.Bind, Source: hp, Dest: hp, ReadOnly: true, Why: "git core.hooksPath"})
	}
	if fm := configPath(b.pr, l.dirs[0], dir, b.home, "core.fsmonitor", true); fm != "" {
		if b.pr.exists(fm) {
			b.addPinned(pinnedFile(fm, dir, "git core.fsmonitor"))
		} else {
			l.tripwires = append(l.tripwires, isolator.Tripwire{Path: fm, Why: "core.fsmonitor names it: git on the host would run it", Quarantine: true})
		}
	}
	return nil
}

// addMountPoint binds the directory p onto itself only to make it a mount point (it
// cannot be renamed away then), in the mode p has without that bind: the mode of the
// latest mount covering it. Read-only in a read-only project, read-write in a writable
// one or under a sandbox.writable_dirs entry; never more than that. It goes right
// after that mount, as an anchor does, so every mount placed in p since (a
// sandbox.writable_dirs entry, a mask, a user bind) stays on top of it. A directory
// behind a mask gets none (see behindMask).
func (b *mountBuilder) addMountPoint(p, why string) {
	if b.behindMask(p) {
		return
	}
	i := b.covering(p)
	if i < 0 {
		b.add(isolator.Mount{Kind: isolator.Bind, Source: p, Dest: p, ReadOnly: true, Why: why})
		return
	}
	if c := b.mounts[i]; c.Kind == isolator.Bind && !c.Optional && c.Source == p && c.Target(b.home) == p {
		// p is bound onto itself already (an anchor, a writable_dirs entry, another
		// protection's mount point), in the mode this bind would take, and nothing is
		// mounted between them: a second bind would change nothing but cost a mount.
		// An optional bind may be left out at launch, so it does not count.
		return
	}
	m := isolator.Mount{Kind: isolator.Bind, Source: p, Dest: p, ReadOnly: b.mounts[i].ReadOnly, Why: why}
	// After the mount points already in it, so they stay in the order they came in.
	root := b.mounts[i].Target(b.home)
	for i+1 < len(b.mounts) && mountPointWhys[b.mounts[i+1].Why] && isolator.Within(b.mounts[i+1].Dest, root) {
		i++
	}
	b.insertAfter(i, []isolator.Mount{m})
}

// mountPointWhys are the Whys of the binds of a directory onto itself that only make
// it a mount point.
var mountPointWhys = map[string]bool{anchorWhy: true, parentWhy: true, pinnedDirWhy: true}

// parentWhy is the Why of the mount point of a directory holding files host tools run.
const parentWhy = "holds files run by tools on the host"

// addPinned adds ms (pinnedFile's, the git layout's), each mount point as
// addMountPoint does; none behind a mask (see behindMask).
func (b *mountBuilder) addPinned(ms []isolator.Mount) {
	for _, m := range ms {
		switch {
		case m.Why == pinnedDirWhy:
			b.addMountPoint(m.Dest, m.Why)
		case !b.behindMask(m.Target(b.home)):
			b.add(m)
		}
	}
}

// behindMask reports whether p is seen through a mask: the latest mount at or above
// p masks it (a hide_paths entry, which the protections placed after it must not
// undo). A protection bind there would show the host's p over the mask the user asked
// for, and is left out: the sandbox can neither see nor reach p, so it cannot plant
// anything there. A mask is a mount point (it cannot be renamed or removed; the
// sandbox has no right to unmount it) of a read-only tmpfs or an empty read-only
// file, and the directories above it in a writable bind are anchored (hide).
func (b *mountBuilder) behindMask(p string) bool {
	i := b.covering(p)
	return i >= 0 && (b.mounts[i].Kind == isolator.MaskDir || b.mounts[i].Kind == isolator.MaskFile)
}

// covering returns the index in b.mounts of the latest mount at or above p, or -1.
func (b *mountBuilder) covering(p string) int {
	for i := len(b.mounts) - 1; i >= 0; i-- {
		if isolator.Within(p, b.mounts[i].Target(b.home)) {
			return i
		}
	}
	return -1
}

// hostExecuted are project files whose content tools on the host run or load as
// configuration (hooks, MCP servers, tasks, plugins, env scripts, toolchains,
// language servers); like .git/hooks they are read-only, so a sandboxed agent cannot
// plant code that runs outside the sandbox later. Only files that exist are protected
// (an empty stand-in would be invalid JSON to those tools); a missing one is a
// tripwire, reported as soon as the sandbox creates it.
//
// Version files run something when they can name a program rather than a version:
// rustup runs the toolchain a rust-toolchain file's path names (and a prompt such as
// starship runs rustc --version on entering the directory), asdf's shims run a
// .tool-versions "path:" version, mise trusts its config files by path (a trusted
// file's env, hooks and path: versions apply on cd once changed). .nvmrc,
// .node-version and .python-version only name a version the manager resolves among
// its own installs (pyenv refuses path-like names since 2.3.3, CVE-2022-35861), so
// they are not listed. Zed trusts a worktree by path and then starts the language
// servers its .zed/settings.json names, as Helix does with .helix/languages.toml;
// JetBrains IDEs trust a project by path and run .idea's file watchers on every
// change and its run configurations on a click. The names tools read in every
// directory up to / are subdirExecuted's.
var hostExecuted = slices.Concat([]string{
	".claude/settings.json", ".claude/settings.local.json", ".mcp.json",
	// Claude Code loads it into every conversation as the user's private
	// instructions; git-ignored as a rule, so no diff shows a change to it.
	"CLAUDE.local.md",
	".gemini/settings.json", ".codex/config.toml",
	".vscode/settings.json", ".vscode/tasks.json", ".vscode/launch.json",
	".devcontainer/devcontainer.json", ".devcontainer.json",
	"opencode.json", "opencode.jsonc", ".opencode",
	".cursor/mcp.json", ".aider.conf.yml", ".envrc",
	// lefthook merges its -local config into the hooks every commit runs, in any
	// of its formats, beside the main config or in .config (git-ignored as its
	// docs advise, so no diff shows a change), and runs the scripts of
	// .lefthook-local (source_dir_local).
	"lefthook-local.*", ".lefthook-local.*", ".config/lefthook-local.*", ".lefthook-local",
}, subdirExecuted, []string{
	".zed/settings.json", ".zed/tasks.json", ".zed/debug.json", ".idea",
	".helix/languages.toml", ".helix/config.toml",
})

// subdirExecuted are the hostExecuted names their tools read in every directory from
// where they run up to / (rustup, asdf, mise), not only where the project begins: a
// sandbox that writes sub/rust-toolchain.toml runs what it names on the host when you
// cd sub. Below the top directory they are found by the project scan, which
// visits every directory anyway (isolator.SubdirFiles). mise's open-ended profile
// names are patterns with a literal prefix, which rejects most names at the cost
// of a comparison. Names the host's environment adds (hostExecutedNames) are
// protected at the top only.
var subdirExecuted = []string{
	"rust-toolchain.toml", "rust-toolchain", ".tool-versions",
	// mise's project config files (and rtx's, mise's old name), as mise's
	// config/mod.rs lists them; a pattern covers the open-ended names, the
	// MISE_ENV profiles (mise.<env>.toml) and their .local variants.
	"mise.toml", ".mise.toml", ".mise/config.toml", "mise/config.toml", ".config/mise.toml",
	".config/mise/config.toml", ".config/mise/mise.toml", ".config/mise/mise.local.toml", ".config/mise/conf.d", ".rtx.toml",
	"mise.*.toml", ".mise.*.toml", ".mise/config.*.toml", "mise/config.*.toml", ".config/mise.*.toml",
	".config/mise/config.*.toml", ".rtx.*.toml",
	// mise's early settings, read untrusted before any config file: they choose
	// which names and profiles mise loads (override_config_filenames, env).
	".miserc.toml", ".config/miserc.toml",
	// yarn's rc files (berry's Configuration.findRcFiles, yarn 1's getRcPaths): their
	// yarnPath / yarn-path names the release every yarn command runs instead of
	// itself, their plugins what every yarn command loads (protectYarnNamed).
	".yarnrc.yml", ".yarnrc",
}

// protectSubdir makes the files the project scan found below sub-directories
// (isolator.SubdirFiles) read-only like the top directory's, each directory between
// the project and one anchored so that none can be renamed away; a symlink is
// protected through its target when that lies in the project and is no directory
// (but for conf.d, a directory by name). It returns the files
// it was given, for the watch to count as there already.
func (b *mountBuilder) protectSubdir(dir string, files []string) ([]string, error) {
	const key = "the protection of files host tools run"
	for _, f := range files {
		fi, err := b.pr.Lstat(f)
		if err != nil {
			continue // gone since the scan
		}
		if base, yml, ok := b.yarnRCBase(f); ok {
			// Before f becomes its link's target: a linked rc file is not read.
			if err := b.protectYarnNamed(f, base, yml, dir); err != nil {
				return nil, err
			}
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			t, err := b.pr.EvalSymlinks(f)
			if err != nil || !isolator.Within(t, dir) || t == dir {
				continue // outside the project: the sandbox sees it read-only, if at all
			}
			if b.pr.isDir(t) && filepath.Base(f) != "conf.d" {
				// No tool reads a directory under a file's name; binding it would let a
				// planted link (sub/.tool-versions -> ../src) make any directory read-only.
				continue
			}
			f = t
		}
		if err := refuseLinkedProtected(b.pr, f, dir); err != nil {
			return nil, err
		}
		if b.behindMask(f) {
			continue
		}
		if err := b.anchor(f, key, true); err != nil {
			return nil, err
		}
		b.add(isolator.Mount{Kind: isolator.Bind, Source: f, Dest: f, ReadOnly: true, Why: "run by tools on the host"})
	}
	return files, nil
}

// isPattern reports whether a hostExecuted entry is a pattern (in its last element).
func isPattern(rel string) bool { return strings.ContainsAny(rel, "*?[") }

// hostExecutedFiles returns the files of the project dir that exist under the names
// (hostExecutedNames), each pattern's matches in its directory sorted by name. Each
// directory a pattern lies in is listed once per call (the project's top holds most
// of them: one listing where there was one per pattern).
func hostExecutedFiles(pr Probe, dir string, names []string) []string {
	var out []string
	listed := map[string][]string{}
	for _, rel := range names {
		f := filepath.Join(dir, rel)
		if !isPattern(rel) {
			if pr.exists(f) {
				out = append(out, f)
			}
			continue
		}
		d := filepath.Dir(f)
		names, ok := listed[d]
		if !ok {
			names, _ = pr.names(d) // none when the directory does not exist
			listed[d] = names
		}
		for _, n := range names {
			if ok, _ := path.Match(filepath.Base(rel), n); ok {
				out = append(out, filepath.Join(filepath.Dir(f), n))
			}
		}
	}
	return out
}

// huskyScripts returns the directory of husky's hook scripts when the hooks directory
// hp (core.hooksPath) is husky's (v9): `<dir>/_`, holding its `h`, which every hook
// there sources and which runs `<dir>/<hook>` (`.husky/pre-commit`), one level up, out
// of hp. Read-only like hp: git on the host runs them at each commit. "" when hp is
// no husky directory, or its parent is the project itself (that would make the whole
// project read-only: husky never puts it there).
func huskyScripts(pr Probe, hp, dir string) string {
	if filepath.Base(hp) != "_" {
		return ""
	}
	if fi, err := pr.Lstat(filepath.Join(hp, "h")); err != nil || !fi.Mode().IsRegular() {
		return ""
	}
	parent := filepath.Dir(hp)
	if parent == dir || !isolator.Within(parent, dir) {
		return ""
	}
	return parent
}

// configPath returns where key (core.hooksPath, core.fsmonitor) of the repository
// with the git dir gitdir points when that lies inside the project dir, else "". Like
// git, it reads the system, global and repository config in that order and the last
// value wins; include directives are not followed. For a command (program), a value
// without a slash is no project path (a command on PATH, "true").
func configPath(pr Probe, gitdir, dir, home, key string, program bool) string {
	files := []string{"/etc/gitconfig", filepath.Join(home, ".config", "git", "config"), filepath.Join(home, ".gitconfig"), filepath.Join(gitdir, "config")}
	v := ""
	for _, f := range files {
		b, err := pr.readWritable(f, true) // the repository's config may be the sandbox's (a new .git)
		if err != nil {
			continue
		}
		es, err := gitconfig.Parse(b)
		if err != nil {
			continue // git refuses the file too
		}
		if vs := gitconfig.Values(es, key); len(vs) > 0 {
			v = vs[len(vs)-1]
		}
	}
	switch {
	case v == "" || program && !strings.Contains(v, "/"):
		return ""
	case strings.HasPrefix(v, "~/"):
		v = filepath.Join(home, v[2:])
	case !filepath.IsAbs(v):
		v = filepath.Join(dir, v)
	}
	v = filepath.Clean(v)
	if isolator.Within(v, dir) && v != dir {
		return v
	}
	return ""
}

// view returns the system view, once it is worked out.
func (b *mountBuilder) view() (isolator.SystemView, error) {
	if b.sysAhead != nil {
		b.sys, b.sysErr = b.sysAhead()
		b.sysAhead = nil
	}
	return b.sys, b.sysErr
}

// visible reports whether p can be seen in the view built so far: the system view or
// a bind of the host's p shows it, and no mask (a hide_paths entry) covers it.
func (b *mountBuilder) visible(p string) bool {
	if b.behindMask(p) {
		return false
	}
	sys, _ := b.view() // a view that failed shows nothing; Build returns its error
	if sys.Host {
		return true
	}
	for _, sp := range sys.Paths {
		if isolator.Within(p, sp.Path) {
			return true
		}
	}
	return b.boundHost(p)
}

// homeRel is v's path below home when v is an absolute path strictly below it, where a
// tool's binding of it lands home-relative (tools.Host.at), else "".
func homeRel(v, home string) string {
	if !filepath.IsAbs(v) {
		return ""
	}
	rel, ok := strings.CutPrefix(filepath.Clean(v), home+"/")
	if !ok || home == "/" {
		return ""
	}
	return rel
}

// linkOnWay reports whether a directory between dir and f is a symbolic link.
func (b *mountBuilder) linkOnWay(f, dir string) bool {
	for d := filepath.Dir(f); d != dir && isolator.Within(d, dir); d = filepath.Dir(d) {
		if fi, err := b.pr.Lstat(d); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
			return true
		}
	}
	return false
}

// yarnRunNamed reports whether f, a file in the project dir, is one YARN_YARN_PATH or
// YARN_PLUGINS names in the top directory.
func (b *mountBuilder) yarnRunNamed(f, dir string) bool {
	rel, err := filepath.Rel(dir, f)
	return err == nil && slices.Contains(b.yarnRun, rel)
}
