package prestart

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
)

// ErrUnsafe is wrapped by Vet's refusals: bwrap started from the record could change
// the host before the fresh plan is compared with it.
var ErrUnsafe = errors.New("launch record refused")

// Source is a bind's source: the record's descriptor FD (Path is its File's), or,
// for a bind by path, Path alone (FD 0).
type Source struct {
	FD   int
	Path string
}

// Host is what Vet asks of the host.
type Host interface {
	// Present reports whether rel (relative and clean; "." for the source itself)
	// names an existing file below the bind source src, every component reached
	// without following a symbolic link, the last one included.
	Present(src Source, rel string) (bool, error)
}

// Expect is what a record is held to that it does not say itself.
type Expect struct {
	// StateRoot is devsandbox's own state directory ($XDG_STATE_HOME/devsandbox): a
	// record's TmpBase must be StateRoot/<project>/tmp.
	StateRoot string
}

// The options of bubblewrap a record's argv may use, with their number of
// arguments: those devsandbox's renderer emits for a launch without a prefix (no
// pasta, no cgroup step, no systemd-run) and without published ports. Every other
// option is refused: --dir, --chmod and --bind-data create or change files wherever
// they point, --dev-bind exposes devices, and --block-fd, --info-fd,
// --json-status-fd and --sync-fd are the early start's own.
var options = map[string]int{
	"--unshare-all": 0, "--share-net": 0, "--die-with-parent": 0, "--new-session": 0,
	"--unshare-user": 0, "--disable-userns": 0, "--as-pid-1": 0,
	"--cap-drop": 1, "--perms": 1, "--size": 1, "--tmpfs": 1, "--dev": 1, "--proc": 1,
	"--remount-ro": 1, "--seccomp": 1, "--chdir": 1,
	"--symlink": 2, "--file": 2, "--ro-bind-data": 2, "--bind-fd": 2, "--ro-bind-fd": 2,
	"--ro-bind": 2, "--ro-bind-try": 2, "--bind": 2,
}

// coverKind is what a placed mount holds below it, for what bwrap may do there.
type coverKind int

const (
	// coverTmpfs is bwrap's root or a --tmpfs: bwrap's own, empty but for what the
	// argv placed in it; files, links and mount points are created there harmlessly.
	coverTmpfs coverKind = iota
	// coverHost is a bind of a host directory or file: nothing may be created
	// through it, and a mount below it only at a path present on the host.
	coverHost
	// coverOther is --dev, --proc or a data file: nothing is placed below it (the
	// links bwrap makes in /dev and the magic links of /proc lead to the host).
	coverOther
)

type placed struct {
	dest string
	kind coverKind
	src  Source
}

// Vet reports whether bubblewrap, started with the record's argv and stopped at its
// --block-fd, leaves the host as it was: every file, link or mode it would create or
// change lies in a tmpfs of the sandbox's own; every mount point under a host bind
// already exists on the host (h), reached without a symbolic link; nothing is placed
// at or below a link the argv made (bwrap would follow it, before its pivot, into
// the host); only the options devsandbox renders are used; bind sources are
// descriptors the early start opens itself (read-only binds by path excepted: a
// read-only mount creates nothing below it), and the one read-write bind by path is
// the session /tmp, in the project's state directory; the syscall filter is given
// (--seccomp). Its refusals wrap ErrUnsafe.
//
// What Vet cannot rule out: a path present when it is asked and removed before bwrap
// gets there (a concurrent session's), which bwrap then creates empty, as the launch
// that wrote the record did.
func Vet(r *Record, x Expect, h Host) error {
	if err := r.validate(); err != nil {
		return err
	}
	refuse := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrUnsafe, fmt.Sprintf(format, args...))
	}
	if !absClean(x.StateRoot) {
		return refuse("no state directory to hold the session /tmp to")
	}
	if r.TmpBase != "" && filepath.Base(r.TmpBase) != "tmp" || r.TmpBase != "" && filepath.Dir(filepath.Dir(r.TmpBase)) != x.StateRoot {
		return refuse("the session /tmp's directory %q is not a project's in %s", r.TmpBase, x.StateRoot)
	}
	files := map[int]File{}
	for _, f := range r.Files {
		files[f.FD] = f
	}
	used := map[int]bool{}
	useFD := func(arg string, kinds ...FileKind) (File, error) {
		n, err := strconv.Atoi(arg)
		if err != nil || strconv.Itoa(n) != arg {
			return File{}, refuse("descriptor %q is not a number", arg)
		}
		f, ok := files[n]
		if !ok {
			return File{}, refuse("descriptor %d is not one of the record's", n)
		}
		if used[n] {
			return File{}, refuse("descriptor %d is used twice", n)
		}
		for _, k := range kinds {
			if f.Kind == k {
				used[n] = true
				return f, nil
			}
		}
		return File{}, refuse("descriptor %d is a %s descriptor, not a %s one", n, f.Kind, kinds[0])
	}
	mounts := []placed{{dest: "/", kind: coverTmpfs}}
	var links []string
	// at checks what bwrap does to place something at dest: create a file or a link
	// (creating), else create a mount point if none is there.
	at := func(op, dest string, creating bool) error {
		if !absClean(dest) {
			return refuse("%s: destination %q is not an absolute clean path", op, dest)
		}
		for _, l := range links {
			if within(dest, l) {
				return refuse("%s %s: at or below the link %s the argv placed, which bwrap would follow into the host", op, dest, l)
			}
		}
		c := mounts[0]
		for _, m := range mounts {
			if within(dest, m.dest) {
				c = m // the last mount at or above dest is what dest is in
			}
		}
		switch {
		case c.kind == coverTmpfs:
			return nil
		case c.kind == coverOther:
			return refuse("%s %s: below %s, where nothing is placed", op, dest, c.dest)
		case creating:
			return refuse("%s %s: would create or change a file on the host, through the bind at %s", op, dest, c.dest)
		}
		rel, err := filepath.Rel(c.dest, dest)
		if err != nil {
			return refuse("%s %s: %v", op, dest, err)
		}
		ok, err := h.Present(c.src, rel)
		if err != nil {
			return fmt.Errorf("%w: %s %s: %w", ErrUnsafe, op, dest, err)
		}
		if !ok {
			return refuse("%s %s: would create a mount point on the host, through the bind at %s", op, dest, c.dest)
		}
		return nil
	}
	a := r.Argv
	sessionBound, end, seccomp := false, false, false
	for i := 1; i < len(a) && !end; i++ {
		op := a[i]
		if op == "--" {
			end = true
			break
		}
		n, ok := options[op]
		if !ok {
			return refuse("option %q is not one devsandbox renders", op)
		}
		if i+n >= len(a) {
			return refuse("%s: missing arguments", op)
		}
		arg := a[i+1 : i+1+n]
		i += n
		var err error
		switch op {
		case "--cap-drop":
			if arg[0] != "ALL" {
				err = refuse("--cap-drop %q", arg[0])
			}
		case "--perms":
			if v, perr := strconv.ParseUint(arg[0], 8, 32); perr != nil || v > 0o777 || len(arg[0]) != 4 || arg[0][0] != '0' {
				err = refuse("--perms %q", arg[0])
			}
		case "--size":
			if v, perr := strconv.ParseUint(arg[0], 10, 63); perr != nil || v == 0 || strconv.FormatUint(v, 10) != arg[0] {
				err = refuse("--size %q", arg[0])
			}
		case "--seccomp":
			_, err = useFD(arg[0], KindSeccomp)
			seccomp = true
		case "--chdir", "--remount-ro":
			if !absClean(arg[0]) {
				err = refuse("%s %q is not an absolute clean path", op, arg[0])
			}
		case "--tmpfs":
			if err = at(op, arg[0], false); err == nil {
				mounts = append(mounts, placed{dest: arg[0], kind: coverTmpfs})
			}
		case "--dev", "--proc":
			if err = at(op, arg[0], false); err == nil {
				mounts = append(mounts, placed{dest: arg[0], kind: coverOther})
			}
		case "--symlink":
			if strings.ContainsRune(arg[0], 0) {
				err = refuse("--symlink: malformed target")
			} else if err = at(op, arg[1], true); err == nil {
				links = append(links, arg[1])
			}
		case "--file":
			if _, err = useFD(arg[0], KindData, KindContent); err == nil {
				err = at(op, arg[1], true)
			}
		case "--ro-bind-data":
			if _, err = useFD(arg[0], KindData, KindContent); err == nil {
				if err = at(op, arg[1], false); err == nil {
					mounts = append(mounts, placed{dest: arg[1], kind: coverOther})
				}
			}
		case "--bind-fd", "--ro-bind-fd":
			var f File
			if f, err = useFD(arg[0], KindSource); err == nil {
				if err = at(op, arg[1], false); err == nil {
					mounts = append(mounts, placed{dest: arg[1], kind: coverHost, src: Source{FD: f.FD, Path: f.Path}})
				}
			}
		case "--ro-bind", "--ro-bind-try":
			if !absClean(arg[0]) {
				err = refuse("%s: source %q is not an absolute clean path", op, arg[0])
			} else if err = at(op, arg[1], false); err == nil {
				mounts = append(mounts, placed{dest: arg[1], kind: coverHost, src: Source{Path: arg[0]}})
			}
		case "--bind":
			// Read-write by path: only the session /tmp the early start makes itself.
			if r.TmpBase == "" || arg[0] != r.TmpBase+"/"+SessionPlaceholder || arg[1] != "/tmp" || sessionBound {
				err = refuse("--bind %s %s: a read-write bind by path other than the session /tmp", arg[0], arg[1])
			} else if err = at(op, arg[1], false); err == nil {
				// A directory the early start makes, empty and private: what bwrap
				// creates in it (a mount point for a home under /tmp) is in no file
				// of the host's but that new directory, as in a tmpfs.
				sessionBound = true
				mounts = append(mounts, placed{dest: arg[1], kind: coverTmpfs})
			}
		}
		if err != nil {
			return err
		}
	}
	if !end {
		return refuse("bwrap's options do not end with --")
	}
	if !seccomp {
		// The filter is read after the block, from a pipe the launch writes only at
		// release: should devsandbox die with bwrap still waiting, the block and that
		// pipe read end-of-file, and bwrap stops at the empty program instead of
		// running the record's command.
		return refuse("no --seccomp: bwrap would run the command should devsandbox die before the comparison")
	}
	for _, f := range r.Files {
		if !used[f.FD] {
			return refuse("descriptor %d is not used by the argv", f.FD)
		}
	}
	return nil
}

// within reports whether p is dir or below it (both clean and absolute).
func within(p, dir string) bool {
	return p == dir || dir == "/" || strings.HasPrefix(p, dir+"/")
}
