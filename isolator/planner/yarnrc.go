package planner

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/devsandbox/devsandbox/isolator"
)

// yarn's rc files name JavaScript files that every yarn command on the host runs: a
// .yarnrc.yml's yarnPath (yarn 2+, berry; yarn 1.22 honours it too) and a .yarnrc's
// yarn-path (yarn 1) name the release yarn runs instead of itself, even for
// `yarn --version`, and a .yarnrc.yml's plugins each name a plugin file every yarn
// command loads. Both rc names are subdirExecuted's (yarn reads them in every
// directory up to /); the files they name are protected here when they lie in the
// project, resolved from the rc file's directory as yarn does.

// yarnRCNames are the rc file names whose named files protectYarnNamed protects.
var yarnRCNames = map[string]bool{".yarnrc.yml": true, ".yarnrc": true}

// yarnFallbackDirs are the directories, relative to an rc file's directory, that are
// made read-only whole when devsandbox cannot tell what the rc file names: where
// `yarn set version` and `yarn plugin import` put the release and the plugins.
var yarnFallbackDirs = []string{".yarn/releases", ".yarn/plugins"}

// yarnNamedWhy is the Why of the read-only bind of a file a yarn rc file names.
const yarnNamedWhy = "yarn on the host runs it (yarnPath, yarn-path, plugins)"

// parseYarnRC returns the paths the rc file b names for yarn to run, as written:
// yarnPath and the plugins' paths of a .yarnrc.yml (yml), yarn-path (or yarnPath) of
// a yarn 1 .yarnrc. It reads only the lines it needs, in the plain shapes yarn writes
// them (`yarnPath: .yarn/releases/yarn-4.5.0.cjs`, `- path: .yarn/plugins/x.cjs`,
// `yarn-path "./bin/yarn.js"`); ok is false when one of those keys has a value it
// cannot read as a plain or quoted scalar (a flow collection, an anchor or alias, a
// block scalar, a tag, an environment variable), so that the caller protects the
// usual directories whole instead.
func parseYarnRC(b []byte, yml bool) (paths []string, ok bool) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, maxWritableFile)
	inPlugins := false
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), " \t\r")
		line = stripYarnComment(line)
		trimmed := strings.TrimLeft(line, " \t")
		if trimmed == "" || strings.HasPrefix(trimmed, "#") {
			continue
		}
		top := trimmed == line
		if !yml {
			k, v, found := strings.Cut(trimmed, " ")
			if !found {
				k, v, found = strings.Cut(trimmed, "\t")
			}
			k = strings.Trim(strings.TrimSuffix(k, ":"), `"`) // yarn 1's parser takes `key: value` too
			if k == "yarn-path" || k == "yarnPath" || k == "--yarn-path" {
				p, good := yarnScalar(strings.TrimLeft(strings.TrimPrefix(v, "="), " \t"))
				if !found || !good {
					return nil, false
				}
				paths = append(paths, p)
			}
			continue
		}
		if top {
			inPlugins = false
			k, v, _ := strings.Cut(trimmed, ":")
			k = strings.Trim(k, `"'`)
			v = strings.TrimLeft(v, " \t")
			switch k {
			case "yarnPath":
				p, good := yarnScalar(v)
				if !good {
					return nil, false
				}
				paths = append(paths, p)
			case "plugins":
				if v != "" {
					return nil, false // a flow list, an alias
				}
				inPlugins = true
			}
			continue
		}
		if !inPlugins {
			continue
		}
		// An item of plugins: `- path: x`, `- x`, or `path: x` in an item's mapping.
		item := strings.TrimPrefix(trimmed, "-")
		dash := item != trimmed
		item = strings.TrimLeft(item, " \t")
		k, v, isMap := strings.Cut(item, ":")
		switch {
		case dash && item == "":
			continue // the item's mapping follows on the next lines
		case isMap && !strings.HasPrefix(k, `"`) && !strings.HasPrefix(k, "'") && !strings.ContainsAny(k, " \t"):
			if k != "path" {
				continue // spec, checksum
			}
			p, good := yarnScalar(strings.TrimLeft(v, " \t"))
			if !good {
				return nil, false
			}
			paths = append(paths, p)
		case dash:
			p, good := yarnScalar(item)
			if !good {
				return nil, false
			}
			paths = append(paths, p)
		default:
			return nil, false
		}
	}
	if sc.Err() != nil {
		return nil, false
	}
	return paths, true
}

// stripYarnComment drops a comment (" #" outside quotes) from the end of line.
func stripYarnComment(line string) string {
	var quote byte
	for i := 0; i < len(line); i++ {
		switch c := line[i]; {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
		case c == '#' && (i == 0 || line[i-1] == ' ' || line[i-1] == '\t'):
			return strings.TrimRight(line[:i], " \t")
		}
	}
	return line
}

// yarnScalar returns the plain or quoted scalar v names, and false for anything else
// (empty, a flow collection, an anchor, alias, tag or block scalar, an environment
// variable yarn would expand).
func yarnScalar(v string) (string, bool) {
	if len(v) >= 2 && (v[0] == '"' && v[len(v)-1] == '"' || v[0] == '\'' && v[len(v)-1] == '\'') {
		v = v[1 : len(v)-1]
		if strings.ContainsAny(v, `\"'`) {
			return "", false // escapes: not worth getting wrong
		}
	} else if v == "" || strings.ContainsAny(v[:1], "{[&*|>!%@`\"'") {
		return "", false
	}
	if v == "" || strings.Contains(v, "${") || strings.ContainsAny(v, "\x00\n") {
		return "", false
	}
	return v, true
}

// protectYarnNamed protects the files the yarn rc file rc (in the project dir) names
// for yarn to run: each that resolves, without leaving the project, to a regular file
// in it is read-only, each directory between the project and it a mount point; one
// that does not exist yet is a tripwire. When rc cannot be read as a regular file of
// bounded size (a link, a FIFO, too large) or parsed (parseYarnRC), the directories
// yarn puts releases and plugins in are made read-only whole, with a warning.
// Nothing named outside the project is devsandbox's to protect. base is the
// directory yarn found rc for (yarnRCBase), which the paths it names are resolved
// from; yml is false for yarn 1's .yarnrc.
func (b *mountBuilder) protectYarnNamed(rc, base string, yml bool, dir string) error {
	data, err := b.pr.readWritable(rc, false)
	var paths []string
	ok := err == nil
	if ok {
		paths, ok = parseYarnRC(data, yml)
	}
	if !ok {
		why := "devsandbox cannot read it"
		if err != nil {
			why = fmt.Sprintf("devsandbox cannot read it (%v)", err)
		}
		b.yarnWarns = append(b.yarnWarns, fmt.Sprintf("%s: %s as it reads the yarnPath, yarn-path and plugins it names, so %s are read-only in the sandbox whole instead (a release or plugin named elsewhere is not protected); write those keys as plain values", rc, why, strings.Join(yarnFallbackDirs, " and ")))
		paths = append(paths, yarnFallbackDirs...)
	}
	for _, p := range paths {
		if err := b.protectYarnPath(filepath.Join(base, p), base, dir, !ok); err != nil {
			return err
		}
	}
	return nil
}

// protectYarnPath protects p, a path an rc file found for base names (or a fallback
// directory when dirOK), when it resolves inside the project dir: links are followed
// only to see where they end, and one ending outside the project, or at it, is left
// alone. A file that is a symbolic link is protected through its target; the link
// itself cannot be bound, so where it lies in the directories yarn keeps releases
// and plugins in (yarnFallbackDirs), that directory is read-only whole (the link
// cannot be retargeted or removed), and elsewhere a warning says it is not.
func (b *mountBuilder) protectYarnPath(p, base, dir string, dirOK bool) error {
	p = filepath.Clean(p)
	if !isolator.Within(p, dir) || p == dir {
		return nil // outside the project: not devsandbox's to protect
	}
	if err := b.protectYarnLinkedDirs(p, base, dir); err != nil {
		return err
	}
	if !dirOK {
		if fi, err := b.pr.Lstat(p); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
			if err := b.protectYarnLink(p, base, dir); err != nil {
				return err
			}
		}
	}
	t, err := b.pr.EvalSymlinks(p)
	if err != nil {
		if !dirOK && !b.pr.exists(p) {
			// Missing: yarn fails now, and would run what the sandbox puts there.
			b.yarnTripwires = append(b.yarnTripwires, isolator.Tripwire{Path: p, Why: yarnNamedWhy})
		}
		return nil
	}
	if !isolator.Within(t, dir) || t == dir {
		return nil
	}
	if b.pr.isDir(t) != dirOK {
		return nil // a directory under a file's name, or a file where a directory was expected
	}
	if b.yarnPinned[t] {
		return nil // another rc file names it too
	}
	if b.yarnPinned == nil {
		b.yarnPinned = map[string]bool{}
	}
	b.yarnPinned[t] = true
	if !dirOK {
		if err := refuseLinkedProtected(b.pr, t, dir); err != nil {
			return err
		}
	}
	for _, m := range pinnedFile(t, dir, yarnNamedWhy) {
		switch {
		case m.Why == pinnedDirWhy:
			b.addMountPoint(m.Dest, parentWhy)
		case !b.behindMask(m.Dest):
			b.add(m)
		}
	}
	return nil
}

// protectYarnLink keeps the link p, a release or plugin an rc file found for base
// names, from being retargeted: its directory is read-only when it is one of the
// yarnFallbackDirs of base; otherwise a warning says the link is protected through
// its target only.
func (b *mountBuilder) protectYarnLink(p, base, dir string) error {
	ld := filepath.Dir(p)
	for _, d := range yarnFallbackDirs {
		if ld == filepath.Join(base, d) {
			return b.protectYarnPath(ld, base, dir, true)
		}
	}
	b.yarnWarns = append(b.yarnWarns, fmt.Sprintf("%s, which yarn on the host runs (yarnPath, yarn-path, plugins), is a symbolic link: devsandbox protects what it points to, but the sandbox can point it elsewhere; keep the file in %s, or make it a regular file", p, strings.Join(yarnFallbackDirs, " or ")))
	return nil
}

// protectYarnLinkedDirs keeps each directory on the way from the project dir to p
// (a release, a plugin, or a directory yarn keeps them in) that is a symbolic link
// (.yarn -> …, .yarn/releases -> …) from being retargeted, which would have the
// host's yarn run what the link then leads to: a bind follows a link, so the link
// itself cannot be made read-only, and the directory holding it is read-only whole,
// with a warning. A link in the project's top directory, which cannot be read-only,
// stops the run. A link's target inside the project is walked the same way.
func (b *mountBuilder) protectYarnLinkedDirs(p, base, dir string) error {
	for hops := 0; hops <= maxLinkHops; hops++ {
		q, target := dir, ""
		rest := strings.Split(strings.TrimPrefix(filepath.Dir(p), dir), string(filepath.Separator))
		for i, c := range rest {
			if c == "" {
				continue
			}
			q = filepath.Join(q, c)
			fi, err := b.pr.Lstat(q)
			if err != nil {
				return nil // missing: nothing further down either
			}
			if fi.Mode()&fs.ModeSymlink == 0 {
				continue
			}
			if target, err = b.pr.Readlink(q); err != nil {
				return fmt.Errorf("%w: reading %s, a link on the way to %s, which yarn on the host runs: %w", isolator.ErrProtection, q, p, err)
			}
			if err := b.protectYarnLinkDir(q, p, base, dir); err != nil {
				return err
			}
			if !filepath.IsAbs(target) {
				target = filepath.Join(filepath.Dir(q), target)
			}
			target = filepath.Join(append([]string{target}, append(rest[i+1:], filepath.Base(p))...)...)
			break
		}
		if target == "" || !isolator.Within(target, dir) || target == dir {
			return nil // no link, or one that leaves the project: not devsandbox's to protect
		}
		p = target
	}
	return fmt.Errorf("%w: more than %d links on the way to %s, which yarn on the host runs (a loop?)", isolator.ErrProtection, maxLinkHops, p)
}

// protectYarnLinkDir makes the directory holding link, a symbolic link on the way to
// p, read-only whole, or refuses when that is the project dir.
func (b *mountBuilder) protectYarnLinkDir(link, p, base, dir string) error {
	ld := filepath.Dir(link)
	if ld == dir {
		return fmt.Errorf("%w: %s, on the way to %s, which yarn on the host runs (yarnPath, yarn-path, plugins), is a symbolic link in the project's top directory: the sandbox could point it elsewhere, and devsandbox cannot make that directory read-only to keep it; replace the link with the directory it points to", isolator.ErrProtection, link, p)
	}
	if b.yarnPinned[ld] {
		return nil
	}
	b.yarnWarns = append(b.yarnWarns, fmt.Sprintf("%s, on the way to %s, which yarn on the host runs (yarnPath, yarn-path, plugins), is a symbolic link: %s is read-only in the sandbox whole so that the link cannot be pointed elsewhere (yarn in the sandbox cannot write there); replace the link with the directory it points to, to keep %s writable", link, p, ld, ld))
	return b.protectYarnPath(ld, base, dir, true)
}
