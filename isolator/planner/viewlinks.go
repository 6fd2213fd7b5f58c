package planner

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"
	"syscall"

	"github.com/devsandbox/devsandbox/isolator"
)

// maxLinkHops bounds how many links one destination is resolved through, as the
// kernel bounds a path lookup (ELOOP).
const maxLinkHops = 40

// linkLayer is what a path of the sandbox's view lies in, for resolving the links on
// the way to a mount destination: the host's files (host, "" for none: a tmpfs, the
// sandbox's own root, a bind the resolution does not look into) or a symlink the view
// itself places (link). bind marks a read-only bind of the Plan's, whose links may
// also be the user's (owner).
type linkLayer struct {
	dest, host, link string
	bind             bool
}

// resolveViewLinks returns p's mounts with each destination placed where bubblewrap
// would place it: through the links of the view above it. bubblewrap makes and mounts
// a destination below its new root, where an absolute link of the host (/var/run ->
// /run on Debian, with system_binds = ["host"] or a bound /var) leads out of it and the
// mount fails ("Can't create file at /var/run/docker.sock"); a relative one (/lib ->
// usr/lib) leads elsewhere in the view. Links are followed only where the view shows
// the host's system files (the host root, a system_binds directory, a link of the
// view), only when root owns them and nothing the sandbox can write holds them; a
// destination through any other link of those layers is refused, as is one below
// the home that a link of the system view moves (a home-relative place must stay
// below the home). Links inside a read-only bind of the Plan's at an absolute place
// (sandbox.ro_binds, a read-only host_mounts entry: a directory of yours holding
// current -> /opt/x/v2) are followed too, when root or the user owns them and
// nothing the sandbox can write holds them: the sandbox cannot retarget them; nor
// can another host user, by the directories holding them (safeHolders). A bind
// whose source the sandbox can write is not looked into (the destination checks
// refuse a link there).
// A mount that, once resolved, repeats an earlier one at the same place with nothing
// between them is the same mount and is dropped. h reads the host.
func resolveViewLinks(p *isolator.Plan, h viewHost) ([]isolator.Mount, error) {
	home := p.User.HostHome
	layers := []linkLayer{{dest: "/"}}
	if p.System.Host {
		layers[0].host = "/"
	}
	for _, sp := range p.System.Paths {
		switch {
		case sp.Link != "":
			layers = append(layers, linkLayer{dest: sp.Path, link: sp.Link})
		case sp.Copy:
			layers = append(layers, linkLayer{dest: sp.Path})
		default:
			layers = append(layers, linkLayer{dest: sp.Path, host: sp.Path})
		}
	}
	fresh := len(layers) // the layers from here on are no system view's
	for _, d := range []string{"/dev", "/proc", "/run", "/tmp"} {
		layers = append(layers, linkLayer{dest: d})
	}
	writable := isolator.Writable(p)
	r := linkResolver{layers: layers, fresh: fresh, writable: writable, uid: p.User.UID, viewHost: h}
	out := make([]isolator.Mount, 0, len(p.Mounts))
	var placed []string // the resolved destination of each mount of out
	for _, m := range p.Mounts {
		dst := m.Target(home)
		at, via, err := r.resolveDest(dst)
		if err != nil {
			return nil, fmt.Errorf("%w: %s %s: %w", isolator.ErrProtection, m.Why, dst, err)
		}
		switch {
		case at == dst:
		case !via.system:
			// Only links inside the Plan's read-only binds, which every isolator
			// places at the same absolute path: the destination is where the
			// link leads in every view.
			m.Dest, m.HomeRel = at, ""
		case m.HomeRel != "" || isolator.Within(dst, home):
			// Containers place the home elsewhere (docker.home): the destination
			// stays. bubblewrap follows a relative link inside its root (Fedora
			// Silverblue's /home -> var/home), not an absolute one.
			if via.abs {
				return nil, fmt.Errorf("%w: %s %s: a link of the host leads it to %s, through an absolute link, out of the home's place in the sandbox; set HOME to the home's real path (%s resolved)", isolator.ErrProtection, m.Why, dst, at, home)
			}
		default:
			m.Dest = at
		}
		if at != dst && repeated(out, placed, m, at) {
			continue
		}
		out = append(out, m)
		placed = append(placed, at)
		l := linkLayer{dest: at}
		if m.Kind == isolator.Bind && m.ReadOnly && m.HomeRel == "" && !inAny(m.Source, writable) {
			l.host, l.bind = m.Source, true
		}
		r.layers = append(r.layers, l)
	}
	return out, nil
}

// inAny reports whether p lies in one of dirs.
func inAny(p string, dirs []string) bool {
	for _, d := range dirs {
		if isolator.Within(p, d) {
			return true
		}
	}
	return false
}

// repeated reports whether m, at at, is a mount of out at the same place with nothing
// placed over it since.
func repeated(out []isolator.Mount, placed []string, m isolator.Mount, at string) bool {
	for j := len(out) - 1; j >= 0; j-- {
		if placed[j] == at {
			o := out[j]
			return o.Kind == m.Kind && o.Source == m.Source && o.ReadOnly == m.ReadOnly &&
				o.Optional == m.Optional && o.HomeRel == m.HomeRel && string(o.Content) == string(m.Content)
		}
		if isolator.Within(at, placed[j]) {
			return false // covered since: the repetition shows again what it covered
		}
	}
	return false
}

// errViewLink is the class of a destination that goes through a link devsandbox does
// not follow.
var errViewLink = errors.New("the destination goes through a link of the view that devsandbox does not follow")

// viewHost is what resolveViewLinks reads of the host: lstat and readlink on every
// launch; acl (Probe.ACL) and read (bounded, /etc/passwd and /etc/group) only for a
// group-writable directory holding a link it follows (safeHolders).
type viewHost struct {
	lstat    func(string) (fs.FileInfo, error)
	readlink func(string) (string, error)
	acl      func(dir string) ([]byte, error)
	read     func(path string) ([]byte, error)
}

// viewHost returns what resolveViewLinks reads of the host through pr. A Probe
// without ACL (a fake host) has no ACLs.
func (pr Probe) viewHost() viewHost {
	h := viewHost{lstat: pr.Lstat, readlink: pr.Readlink, acl: pr.ACL, read: func(p string) ([]byte, error) { return pr.readWritable(p, true) }}
	if h.acl == nil {
		h.acl = func(string) ([]byte, error) { return nil, nil }
	}
	return h
}

// linkResolver resolves destinations through layers (the last layer at or above a
// path is what shows there; those from fresh on are tmpfs and the Plan's mounts).
// writable are the host directories the sandbox can write, uid the user's; group
// is the user's primary group, read when first needed (privateGroup).
type linkResolver struct {
	layers   []linkLayer
	fresh    int
	writable []string
	uid      int
	group    *userGroup
	viewHost
}

// linkWay says which links a resolution followed: an absolute one (abs), one of the
// system view's (system).
type linkWay struct{ abs, system bool }

// resolveDest resolves the links on the way to dst.
func (r *linkResolver) resolveDest(dst string) (at string, via linkWay, err error) {
	at = path.Clean(dst)
	for hops := 0; ; {
		next, target, inBind, err := r.resolveOnce(at)
		if err != nil || target == "" {
			return at, via, err
		}
		if hops++; hops > maxLinkHops {
			return "", via, fmt.Errorf("%w: more than %d links on the way (a loop?)", errViewLink, maxLinkHops)
		}
		at = next
		via.abs = via.abs || path.IsAbs(target)
		via.system = via.system || !inBind
	}
}

// resolveOnce follows the first link on the way to at, if any, and returns where it
// leads, its target ("" when there is none) and whether it lies in a bind.
func (r *linkResolver) resolveOnce(at string) (string, string, bool, error) {
	layers, fresh := r.layers, r.fresh
	for i := 1; i <= len(at); i++ {
		if i < len(at) && at[i] != '/' {
			continue
		}
		q, rest := at[:i], at[i:]
		top := 0
		for j := len(layers) - 1; j > 0; j-- {
			if isolator.Within(q, layers[j].dest) {
				top = j
				break
			}
		}
		l := layers[top]
		target := ""
		switch {
		case l.link != "" && l.dest == q:
			target = l.link
		case l.host == "" && top >= fresh:
			// A tmpfs or a mount of the Plan the resolution does not look into
			// (read-write, or in what the sandbox can write): what lies below is
			// not the system view's (every system layer comes before it), but a
			// read-only bind placed in it later may be.
			continue
		case l.host != "":
			host := path.Join(l.host, strings.TrimPrefix(q, l.dest))
			fi, err := r.lstat(host)
			if err != nil {
				return at, "", false, nil // missing on the host: no link further down either
			}
			if fi.Mode()&fs.ModeSymlink == 0 {
				continue
			}
			if err := r.trustedLink(host, fi, l.bind); err != nil {
				return "", "", false, err
			}
			if l.bind {
				if err := r.safeHolders(l.host, host); err != nil {
					return "", "", false, err
				}
			}
			if target, err = r.readlink(host); err != nil {
				return "", "", false, fmt.Errorf("%w: reading %s: %w", errViewLink, host, err)
			}
		default:
			continue
		}
		next := target
		if !path.IsAbs(target) {
			next = path.Join(path.Dir(q), target)
		}
		return path.Join(next, rest), target, l.bind, nil
	}
	return at, "", false, nil
}

// trustedLink refuses a link the sandbox could have placed or changed: one that lies
// in something the sandbox can write, or that root does not own (in a read-only
// bind of the Plan's: neither root nor the user).
func (r *linkResolver) trustedLink(host string, fi fs.FileInfo, inBind bool) error {
	for _, w := range r.writable {
		if isolator.Within(host, w) {
			return fmt.Errorf("%w: %s lies in %s, which the sandbox can write (it may have retargeted the link); use the path the link leads to instead", errViewLink, host, w)
		}
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case ok && st.Uid == 0:
		return nil
	case ok && inBind && r.uid >= 0 && st.Uid == uint32(r.uid):
		return nil
	case inBind:
		return fmt.Errorf("%w: %s is owned neither by root nor by you; use the path the link leads to instead, or own the link", errViewLink, host)
	}
	return fmt.Errorf("%w: %s is not owned by root; mount at the link's target instead, or make root own the link", errViewLink, host)
}
