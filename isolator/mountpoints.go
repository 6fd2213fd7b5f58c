package isolator

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strings"
)

// ReadOnlyDest is a destination whose mount point lies in a read-only bind of a host
// directory: a system directory of the view, the host's root (system_binds =
// ["host"]), a read-only bind. bubblewrap creates a missing mount point, and cannot
// in a read-only directory; so Host, the host path behind Dest, must exist.
type ReadOnlyDest struct {
	Dest     string // the destination in the sandbox
	Why      string // the mount's Why (the binding or config key)
	Source   string // the bind's source, an optional file mask's host file; "" for other kinds
	Optional bool   // a bind (a file mask) that is skipped when Source is missing
	Host     string // the host path behind Dest before the mount
	In       string // the read-only bind's source
	InWhy    string // what that bind is: "system directory", "the host's root", its Why
}

// ReadOnlyDestinations returns the mounts of p (in order) whose destination lies in a
// read-only bind of a host directory, below its top. A destination reached through
// a symlink of the system view (/bin -> usr/bin) is placed where the link leads. It
// is pure; CheckMountPoints looks at the host.
func ReadOnlyDestinations(p *Plan) []ReadOnlyDest {
	type layer struct {
		dest, host, why, link string
		ro                    bool
	}
	layers := []layer{{dest: "/"}} // bwrap's fresh root: a tmpfs made read-only only at the end
	if p.System.Host {
		layers[0] = layer{dest: "/", host: "/", why: "the host's root", ro: true}
	}
	for _, sp := range p.System.Paths {
		switch {
		case sp.Link != "":
			layers = append(layers, layer{dest: sp.Path, link: sp.Link})
		case !sp.Copy:
			layers = append(layers, layer{dest: sp.Path, host: sp.Path, why: "system directory", ro: true})
		}
	}
	for _, d := range []string{"/dev", "/proc", "/run", "/tmp"} {
		layers = append(layers, layer{dest: d})
	}
	var out []ReadOnlyDest
	for _, m := range p.Mounts {
		dst := m.Target(p.User.HostHome)
		at := dst
		in := -1
		for hops := 0; hops < 8; hops++ {
			in = -1
			for i, l := range layers {
				if Within(at, l.dest) {
					in = i
				}
			}
			l := layers[in]
			if l.link == "" || at == l.dest {
				break
			}
			target := l.link
			if !path.IsAbs(target) {
				target = path.Join(path.Dir(l.dest), target)
			}
			at = path.Join(target, strings.TrimPrefix(at, l.dest))
		}
		if l := layers[in]; l.ro && l.dest != at {
			d := ReadOnlyDest{Dest: dst, Why: m.Why, Host: path.Join(l.host, strings.TrimPrefix(at, strings.TrimSuffix(l.dest, "/"))), In: l.host, InWhy: l.why}
			if m.Kind == Bind || m.Kind == MaskFile && m.Optional {
				d.Source, d.Optional = m.Source, m.Optional
			}
			out = append(out, d)
		}
		nl := layer{dest: at, why: m.Why}
		if m.Kind == Bind {
			nl.host, nl.ro = m.Source, m.ReadOnly
		}
		layers = append(layers, nl)
	}
	return out
}

// CheckMountPoints is MountPointRule on the host's file system. The planner applies
// the rule to every Plan it builds (for every isolator); the bwrap backend applies it
// again before launch, for Plans built elsewhere (library users).
func CheckMountPoints(p *Plan) error { return MountPointRule(p, os.Stat, os.Lstat) }

// MountPointRule refuses a destination whose mount point would be new in a read-only
// host directory (ReadOnlyDestinations): bubblewrap cannot create one there (it would
// fail with "Can't mkdir /opt/x: Read-only file system"). docker and krun could make
// it in the container's own file system, but keep to the same rule, so that a
// command line or config file works alike on every isolator. stat and lstat look at
// the host: an optional bind whose source is missing is skipped (bubblewrap skips
// it), and a destination the host already has there is no new mount point.
func MountPointRule(p *Plan, stat, lstat func(string) (fs.FileInfo, error)) error {
	for _, d := range ReadOnlyDestinations(p) {
		if d.Optional {
			if _, err := stat(d.Source); err != nil {
				continue
			}
		}
		if _, err := lstat(d.Host); !errors.Is(err, fs.ErrNotExist) {
			continue
		}
		what := d.Why
		switch {
		case d.Why == "sandbox.host_mounts":
			what = "--mount (sandbox.host_mounts) " + d.Source + ":" + d.Dest
		case d.Source != "":
			what += " " + d.Source + ":" + d.Dest
		default:
			what += " " + d.Dest
		}
		where := "where a new directory can be made (under /mnt, /srv, your home or the project)"
		if d.InWhy == "the host's root" {
			where = "under your home or the project (with system_binds = [\"host\"] all of / is the host's, read-only)"
		}
		return fmt.Errorf("%w: %s: the destination would be a new mount point in %s (%s, read-only in the sandbox), where %s does not exist; no isolator makes a mount point in a directory the sandbox sees read-only from the host (bubblewrap cannot, and docker and krun keep to the same rule); mount it %s or create %s on the host first",
			ErrConfig, what, d.In, d.InWhy, d.Host, where, d.Host)
	}
	return nil
}
