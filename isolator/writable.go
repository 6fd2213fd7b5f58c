package isolator

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// WritableIn returns the bind through which the sandbox of p can write the host
// directory dir, and where dir lies in the sandbox: a read-write bind holds it and no
// later mount covers that place (a read-only bind, a mask). ok is false when none
// does. dir is compared as written: a caller holding a path through a link asks
// for its resolved form too.
func WritableIn(p *Plan, dir string) (m Mount, at string, ok bool) {
	home := p.User.HostHome
	for _, b := range p.Mounts {
		if b.Kind != Bind || b.ReadOnly || !Within(dir, b.Source) {
			continue
		}
		rel, err := filepath.Rel(b.Source, dir)
		if err != nil {
			continue
		}
		dst := filepath.Join(b.Target(home), rel)
		last := -1
		for i, c := range p.Mounts {
			if Within(dst, c.Target(home)) {
				last = i
			}
		}
		if c := p.Mounts[last]; c.Kind == Bind && !c.ReadOnly {
			return c, dst, true
		}
	}
	return Mount{}, "", false
}

// HostProgram refuses a program devsandbox starts on the host, outside every
// namespace (bubblewrap, pasta, systemd-run, podman's service), that a PATH lookup
// found at path where the sandbox of p can write: a PATH entry in the project (an
// activated .venv/bin, npm run's node_modules/.bin, direnv's PATH_add) or in a
// read-write bind. Whatever a sandboxed program planted there under that name
// would run as the user, unsandboxed. The directory the lookup went through, and
// where the program and that directory resolve to, are each judged: a link in a
// writable place can be pointed anywhere. A path that does not resolve is left to
// the start, which fails on it. what names the program for people.
//
// Beyond this plan's binds, the program is refused where any sandbox of the user's
// writes (SandboxWritten): another devsandbox project (project A's .venv/bin on PATH
// while the run is in project B), the sandbox homes, the sessions' /tmp. Those are
// compared by identity (device and inode), so a bind mount or another spelling of
// the same directory is no way round; a directory reached through a path no plan
// names is compared the same way against this plan's read-write binds.
func HostProgram(p *Plan, what, path string) error {
	if p == nil || path == "" {
		return nil
	}
	if !filepath.IsAbs(path) {
		return relativeProgram(what, path)
	}
	dir := filepath.Dir(path)
	dirs := programDirs(path)
	for _, d := range dirs {
		if m, at, ok := WritableIn(p, d); ok {
			return fmt.Errorf("%w: the %s devsandbox would run on the host, %s (found on PATH), lies where this sandbox can write (%s, as %s, through %s): a sandboxed program could have put it there, and it would run outside the sandbox; remove %s from PATH, or put the directory of the %s you mean before it",
				ErrProtection, what, path, d, at, m.Why, dir, what)
		}
	}
	if !dirsUserWritable(dirs) {
		return nil // no sandbox of this user's could have written it
	}
	for _, d := range dirs {
		if m, q, ok := writableAlias(p, d); ok {
			return fmt.Errorf("%w: the %s devsandbox would run on the host, %s (found on PATH), lies where this sandbox can write (%s is %s, bound read-write for %s, under another path): a sandboxed program could have put it there, and it would run outside the sandbox; remove %s from PATH, or put the directory of the %s you mean before it",
				ErrProtection, what, path, q, m.Source, m.Why, dir, what)
		}
	}
	data, state := planRoots(p)
	return sandboxWritten(data, state, what, path, dirs)
}

// SandboxWritten refuses a program devsandbox would start on the host where no plan
// says what a sandbox writes (krun's podman service started by doctor, an image
// build or Check): the program, the directory the PATH lookup went through, a link
// on the way, or where it resolves to lies in a directory some sandbox of the user's
// writes: a devsandbox project or a directory a project's configuration binds
// read-write (the index in data, WrittenIndex, which outlives a project's record;
// the records where there is none yet), the sandbox homes (data) or the sessions'
// /tmp (state). An index that does not read refuses the program. Directories are compared by identity, so a bind mount or another
// spelling of one is no way round. A program no sandbox of this user's could have
// written (one in a directory the user cannot write) is taken without reading the
// records. data and state are $XDG_DATA_HOME/devsandbox and
// $XDG_STATE_HOME/devsandbox (HostRoots).
func SandboxWritten(data, state, what, path string) error {
	if path == "" {
		return nil
	}
	if !filepath.IsAbs(path) {
		return relativeProgram(what, path)
	}
	dirs := programDirs(path)
	if !dirsUserWritable(dirs) {
		return nil
	}
	return sandboxWritten(data, state, what, path, dirs)
}

// HostRoots are $XDG_DATA_HOME/devsandbox and $XDG_STATE_HOME/devsandbox of this
// process's environment (the XDG defaults under $HOME), for SandboxWritten.
func HostRoots() (data, state string) {
	home := os.Getenv("HOME")
	dir := func(env, def string) string {
		if v := os.Getenv(env); filepath.IsAbs(v) {
			return filepath.Join(filepath.Clean(v), "devsandbox")
		}
		if home == "" {
			return ""
		}
		return filepath.Join(home, def, "devsandbox")
	}
	return dir("XDG_DATA_HOME", ".local/share"), dir("XDG_STATE_HOME", ".local/state")
}

// planRoots are the roots of p's own sandbox home and state (the plan's, which are
// those of the environment devsandbox planned with: <data>/devsandbox/<name>/home
// and <state>/devsandbox/<name>), else HostRoots: a library's plan of another
// layout names no root of devsandbox's.
func planRoots(p *Plan) (data, state string) {
	data, state = HostRoots()
	if d := filepath.Dir(filepath.Dir(p.SandboxHome)); p.SandboxHome != "" && filepath.Base(d) == "devsandbox" {
		data = d
	}
	if d := filepath.Dir(p.StateDir); p.StateDir != "" && filepath.Base(d) == "devsandbox" {
		state = d
	}
	return data, state
}

func relativeProgram(what, path string) error {
	return fmt.Errorf("%w: the %s devsandbox would run on the host, %s, was found through a relative PATH entry (or an empty one, which is the working directory): what it names depends on where devsandbox runs, a project the sandbox writes included; make every PATH entry absolute",
		ErrProtection, what, path)
}

// programDirs are the directories a PATH lookup's result path depends on: the one
// the lookup went through, where it resolves to, the directory of each link on the
// way from path to the program (any of them, replaced, would run another program),
// and the directory of the program it resolves to.
func programDirs(path string) []string {
	var dirs []string
	add := func(d string) {
		if slices.Contains(dirs, d) {
			return
		}
		dirs = append(dirs, d)
		if real, err := filepath.EvalSymlinks(d); err == nil && !slices.Contains(dirs, real) {
			dirs = append(dirs, real)
		}
	}
	cur := path
	for range 40 { // the kernel's bound on links followed
		add(filepath.Dir(cur))
		target, err := os.Readlink(cur)
		if err != nil {
			break
		}
		cur = linkTarget(cur, target)
	}
	if cur != path {
		// Links were followed: where the last one's directory resolves to holds the
		// program (a link on the way in a directory reached through a link).
		if real, err := filepath.EvalSymlinks(path); err == nil {
			add(filepath.Dir(real))
		}
	}
	return dirs
}

// linkTarget is where the link at path, reading target, leads, as the kernel
// resolves it: a relative target from the directory the link really is in, and each
// ".." of it from where the components before it really lead, not lexically (a
// lexical ".." after a linked directory names another directory than the kernel
// takes). The last component is left unresolved (the loop reads it next); where its
// directory does not resolve, the lexical form stands (nothing is there to run).
func linkTarget(path, target string) string {
	if !filepath.IsAbs(target) {
		target = filepath.Dir(path) + "/" + target
	}
	i := strings.LastIndexByte(target, '/')
	dir, name := target[:i], target[i+1:]
	if dir == "" {
		dir = "/"
	}
	if name == "" || name == "." || name == ".." {
		return filepath.Clean(target)
	}
	real, err := filepath.EvalSymlinks(dir) // walks ".." after each link resolved
	if err != nil {
		return filepath.Clean(target)
	}
	return filepath.Join(real, name)
}

// dirsUserWritable reports whether this process's user may write any of dirs or a
// directory above one: only then could a sandbox of the user's have planted
// something there (UserWritable's rule).
func dirsUserWritable(dirs []string) bool {
	return firstWritable(dirs) != ""
}

// firstWritable returns the first of paths, or of the directories above one, that
// this process's user may write ("" for none), each asked once. paths hold their
// resolved forms already (programDirs): each is walked up as written.
func firstWritable(paths []string) string {
	var seen []string
	for _, p := range paths {
		for q := p; !slices.Contains(seen, q); q = filepath.Dir(q) {
			if unix.Access(q, unix.W_OK) == nil {
				return q
			}
			seen = append(seen, q)
			if q == "/" || q == "." {
				break
			}
		}
	}
	return ""
}

func idOf(path string) (fileID, bool) {
	var st unix.Stat_t
	if unix.Stat(path, &st) != nil {
		return fileID{}, false
	}
	return fileID{uint64(st.Dev), uint64(st.Ino)}, true
}

// underID returns the first of dir and the directories above it whose identity is
// in ids, and its value.
func underID[T any](dir string, ids map[fileID]T) (string, T, bool) {
	for q := dir; ; q = filepath.Dir(q) {
		if id, ok := idOf(q); ok {
			if v, ok := ids[id]; ok {
				return q, v, true
			}
		}
		if q == "/" || q == "." {
			var zero T
			return "", zero, false
		}
	}
}

// writableAlias returns a read-write bind of p that dir lies in under another path
// than the bind's source (a bind mount of the project elsewhere, another spelling of
// it), and that other path. Masks under the bind are not followed there: such a
// directory is refused (fail closed).
func writableAlias(p *Plan, dir string) (Mount, string, bool) {
	ids := map[fileID]Mount{}
	for _, m := range p.Mounts {
		if m.Kind != Bind || m.ReadOnly {
			continue
		}
		if id, ok := idOf(m.Source); ok {
			if _, seen := ids[id]; !seen {
				ids[id] = m
			}
		}
	}
	q, m, ok := underID(dir, ids)
	if !ok || q == m.Source {
		return Mount{}, "", false // the same path: WritableIn judged it, masks included
	}
	return m, q, true
}

func sandboxWritten(data, state, what, path string, dirs []string) error {
	ids := map[fileID]string{}
	for _, r := range []struct{ dir, why string }{
		{data, "devsandbox's sandbox homes, which the sandboxes write"},
		{state, "devsandbox's state, which holds the sandboxes' /tmp"},
	} {
		if id, ok := idOf(r.dir); ok && r.dir != "" {
			ids[id] = r.why
		}
	}
	if data != "" {
		if err := writtenIDs(data, ids); err != nil {
			return err
		}
	}
	if len(ids) == 0 {
		return nil
	}
	dir := filepath.Dir(path)
	for _, d := range dirs {
		if q, why, ok := underID(d, ids); ok {
			return fmt.Errorf("%w: the %s devsandbox would run on the host, %s (found on PATH), lies in %s (%s is %s): a sandboxed program could have put it there, and it would run outside every sandbox; remove %s from PATH, or put the directory of the %s you mean before it",
				ErrProtection, what, path, d, q, why, dir, what)
		}
	}
	return nil
}

// UserWritable returns the first of path, the directories above it, those of each
// link on the way and those of where it resolves to, that this process's user may
// write ("" for none). Where no
// plan says what a sandbox writes (bwrap's early start, which runs bubblewrap before
// the plan exists; doctor without a configuration), a program is started only when
// no sandbox of the user's could have planted it.
func UserWritable(path string) string {
	// The program itself, then every directory its lookup depends on: the one it
	// was found in, a link's on the way, where it resolves to (programDirs).
	return firstWritable(append([]string{path}, programDirs(path)...))
}

// ChosenDirs are the directories, after the program's own, on the PATH a host
// program devsandbox starts gets when it looks others up itself (podman: conmon, the
// OCI runtime, newuidmap, slirp4netns or pasta): never the user's PATH, whose
// entries may be directories a sandbox writes.
var ChosenDirs = []string{"/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"}

// ChosenPathEnv is environ with PATH replaced by the directory of prog (a program
// judged by HostProgram or SandboxWritten, so that a lookup of its own name finds it
// first), then ChosenDirs.
func ChosenPathEnv(environ []string, prog string) []string {
	dirs := []string{filepath.Dir(prog)}
	for _, d := range ChosenDirs {
		if !slices.Contains(dirs, d) {
			dirs = append(dirs, d)
		}
	}
	env := slices.DeleteFunc(slices.Clone(environ), func(kv string) bool { return strings.HasPrefix(kv, "PATH=") })
	return append(env, "PATH="+strings.Join(dirs, ":"))
}
