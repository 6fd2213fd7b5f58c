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
// itself places (link).
type linkLayer struct {
	dest, host, link string
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
// the home that a link moves (a home-relative place must stay below the home).
// A mount that, once resolved, repeats an earlier one at the same place with nothing
// between them is the same mount and is dropped. lstat and readlink read the host.
func resolveViewLinks(p *isolator.Plan, lstat func(string) (fs.FileInfo, error), readlink func(string) (string, error)) ([]isolator.Mount, error) {
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
	out := make([]isolator.Mount, 0, len(p.Mounts))
	var placed []string // the resolved destination of each mount of out
	for _, m := range p.Mounts {
		dst := m.Target(home)
		at, abs, err := resolveDest(dst, layers, fresh, writable, lstat, readlink)
		if err != nil {
			return nil, fmt.Errorf("%w: %s %s: %w", isolator.ErrProtection, m.Why, dst, err)
		}
		switch {
		case at == dst:
		case m.HomeRel != "" || isolator.Within(dst, home):
			// Containers place the home elsewhere (docker.home): the destination
			// stays. bubblewrap follows a relative link inside its root (Fedora
			// Silverblue's /home -> var/home), not an absolute one.
			if abs {
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
		layers = append(layers, linkLayer{dest: at})
	}
	return out, nil
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

// resolveDest resolves the links on the way to dst in layers (the last layer at or
// above a path is what shows there; those from fresh on are tmpfs and the Plan's
// mounts).
// abs reports whether an absolute link was on the way.
func resolveDest(dst string, layers []linkLayer, fresh int, writable []string, lstat func(string) (fs.FileInfo, error), readlink func(string) (string, error)) (at string, abs bool, err error) {
	at = path.Clean(dst)
	for hops := 0; ; {
		next, target, err := resolveOnce(at, layers, fresh, writable, lstat, readlink)
		if err != nil || target == "" {
			return at, abs, err
		}
		if hops++; hops > maxLinkHops {
			return "", abs, fmt.Errorf("%w: more than %d links on the way (a loop?)", errViewLink, maxLinkHops)
		}
		at, abs = next, abs || path.IsAbs(target)
	}
}

// resolveOnce follows the first link on the way to at, if any, and returns where it
// leads and its target ("" when there is none).
func resolveOnce(at string, layers []linkLayer, fresh int, writable []string, lstat func(string) (fs.FileInfo, error), readlink func(string) (string, error)) (string, string, error) {
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
			// A tmpfs or a mount of the Plan: what lies below is not the system
			// view's (every system layer comes before it), and is not resolved.
			return at, "", nil
		case l.host != "":
			host := path.Join(l.host, strings.TrimPrefix(q, l.dest))
			fi, err := lstat(host)
			if err != nil {
				return at, "", nil // missing on the host: no link further down either
			}
			if fi.Mode()&fs.ModeSymlink == 0 {
				continue
			}
			if err := trustedLink(host, fi, writable); err != nil {
				return "", "", err
			}
			if target, err = readlink(host); err != nil {
				return "", "", fmt.Errorf("%w: reading %s: %w", errViewLink, host, err)
			}
		default:
			continue
		}
		next := target
		if !path.IsAbs(target) {
			next = path.Join(path.Dir(q), target)
		}
		return path.Join(next, rest), target, nil
	}
	return at, "", nil
}

// trustedLink refuses a link the sandbox could have placed or changed: one that root
// does not own, or that lies in something the sandbox can write.
func trustedLink(host string, fi fs.FileInfo, writable []string) error {
	for _, w := range writable {
		if isolator.Within(host, w) {
			return fmt.Errorf("%w: %s lies in %s, which the sandbox can write; mount at the link's target instead", errViewLink, host, w)
		}
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || st.Uid != 0 {
		return fmt.Errorf("%w: %s is not owned by root; mount at the link's target instead, or make root own the link", errViewLink, host)
	}
	return nil
}
