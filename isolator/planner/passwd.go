package planner

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/devsandbox/devsandbox/isolator"
)

// sandboxPasswd returns the /etc/passwd a sandbox with the system view v should see
// in place of the host's (isolator.SystemView.Passwd), or nil when the host's is right.
// OpenSSH (~/.ssh/config, known_hosts, identities), `~user` in shells and a few
// other programs take the home from the passwd entry (getpwuid), not $HOME: when the
// command's HOME is not the home the host user's entry names (a CI runner, `sudo -u`,
// `HOME=/elsewhere devsandbox`, env.set HOME), those programs would read another
// home than every other program does. The copy is the host's with the first entry of
// u.UID naming home, the command's HOME (commandHome), or with such an entry added
// when the host has none. Only a view that shows the host's file needs one; the
// containers write their own (container.UserFiles), naming their HOME.
//
// The entry is no access control: ssh reads at home what the view shows there, as
// any program of the sandbox can.
func sandboxPasswd(pr Probe, v isolator.SystemView, u isolator.User, home string) []byte {
	if !v.Host && !showsPasswd(v.Paths) {
		return nil
	}
	if !nameableHome(home) {
		return nil // not a home a passwd entry can name
	}
	// Through ReadRegular (raw system calls, no os.File): it is read on every launch.
	host, err := pr.readWritable(isolator.PasswdPath, true)
	if err != nil {
		return nil // none to show, or the sandbox's view fails to place it anyway
	}
	return passwdWithHome(host, u, home)
}

// commandHome is the HOME the command runs with under bwrap: env.set's or the host's
// (the plan's environment), else the host user's home.
func commandHome(env []isolator.EnvVar, u isolator.User) string {
	for _, e := range env {
		if e.Name == "HOME" {
			return e.Value
		}
	}
	return u.HostHome
}

// nameableHome reports whether a passwd entry can name home: an absolute path with no
// field separator or line end.
func nameableHome(home string) bool {
	return strings.HasPrefix(home, "/") && !strings.ContainsAny(home, ":\n")
}

// checkSetHome refuses an env.set HOME that no passwd entry can name, which would
// leave ssh and `~user` in another home than $HOME, and one that is a directory of
// the host the view shows (read-only) outside the sandbox's own places (the sandbox
// home, the project, /tmp): ssh, reading ~/.ssh through the entry, would use what the
// host keeps there, such as a real home's ~/.ssh, which hide_paths mask only below the
// HOME devsandbox runs with. A HOME in the project or the sandbox home is followed
// through the links on its way there, as the sandbox will (a sandbox may have planted
// <project>/home -> /usr/share), and the place each leads to is judged the same way.
func (b *mountBuilder) checkSetHome(set map[string]string, project string) error {
	home, ok := set["HOME"]
	if !ok {
		return nil
	}
	if !nameableHome(home) {
		return fmt.Errorf("%w: env.set HOME = %q: HOME must be an absolute path without ':' or a line break (the sandbox's passwd entry names it as your home)", ErrConfig, home)
	}
	c, link := filepath.Clean(home), ""
	for hops := 0; ; hops++ {
		if !b.ownHome(c, project) {
			if link != "" {
				return fmt.Errorf("%w: env.set HOME = %q leads through the link %s, which the sandbox can write, to %s, a directory of the host the sandbox sees: ssh and other programs would take what the host keeps there (its .ssh too) for your home's; replace the link with a directory, or name a HOME without it", ErrConfig, home, link, c)
			}
			return fmt.Errorf("%w: env.set HOME = %q is a directory of the host the sandbox sees: ssh and other programs would take what the host keeps there (its .ssh too) for your home's; name a directory in the sandbox home (%s), the project or /tmp, or one the sandbox does not see", ErrConfig, home, b.home)
		}
		next, l, err := b.homeLink(c, project)
		if err != nil {
			return fmt.Errorf("%w: env.set HOME = %q: reading the link %s on its way: %w; replace the link with a directory, or name a HOME without it", ErrConfig, home, l, err)
		}
		if l == "" {
			return nil
		}
		if hops == maxHomeLinks {
			return fmt.Errorf("%w: env.set HOME = %q leads through more than %d links (the last %s); name a HOME without them", ErrConfig, home, maxHomeLinks, l)
		}
		c, link = next, l
	}
}

// maxHomeLinks bounds the links checkSetHome follows, as the kernel's ELOOP does.
const maxHomeLinks = 40

// ownHome reports whether a HOME at c (a clean absolute path) is one of the sandbox's
// own places: the sandbox home, the project, a place the sandbox sees nothing of the
// host at, or /tmp where no bind of the host's covers it (the session's /tmp,
// whatever the system view shows there).
func (b *mountBuilder) ownHome(c, project string) bool {
	if isolator.Within(c, b.home) || isolator.Within(c, project) || !b.visible(c) {
		return true
	}
	return isolator.Within(c, "/tmp") && !b.boundHost(c)
}

// homeLink returns the first link on the way to c (a path as the sandbox names it)
// inside the project or the sandbox home, both of which the sandbox writes, and c with
// that link replaced by its target, as the sandbox resolves it: "" when there is none.
// The project is looked at on the host at its own path, the sandbox home at its
// directory in devsandbox's data (the project wins where it lies in the home). It
// reads each link, never follows one.
func (b *mountBuilder) homeLink(c, project string) (next, link string, err error) {
	root, host := project, project
	if !isolator.Within(c, project) {
		if !isolator.Within(c, b.home) || b.base == "" {
			return "", "", nil
		}
		root, host = b.home, filepath.Join(b.base, "home")
	}
	rel, err := filepath.Rel(root, c)
	if err != nil {
		return "", "", nil
	}
	at := isolator.SymlinkIn(filepath.Join(host, rel), host, b.pr.Lstat)
	if at == "" {
		return "", "", nil
	}
	atRel, _ := filepath.Rel(host, at)
	link = filepath.Join(root, atRel)
	target, err := b.pr.Readlink(at)
	if err != nil {
		return "", link, err
	}
	if !filepath.IsAbs(target) {
		target = filepath.Join(filepath.Dir(link), target)
	}
	rest, _ := filepath.Rel(link, c)
	return filepath.Join(target, rest), link, nil
}

// showsPasswd reports whether the system paths show the host's /etc/passwd.
func showsPasswd(paths []isolator.SystemPath) bool {
	for _, sp := range paths {
		if sp.Link == "" && isolator.Within(isolator.PasswdPath, sp.Path) {
			return true
		}
	}
	return false
}

// boundHost reports whether a bind of the host's p at its own path shows p (the
// sandbox home, bound at the host home's path, does not).
func (b *mountBuilder) boundHost(p string) bool {
	for _, m := range b.mounts {
		if m.Kind == isolator.Bind && m.Source == m.Target(b.home) && isolator.Within(p, m.Source) {
			return true
		}
	}
	return false
}

// passwdWithHome returns host (an /etc/passwd) with the home of u's entry, the first
// with u.UID, set to home, or with an entry for u appended when there is none; nil
// when the entry names that home already.
func passwdWithHome(host []byte, u isolator.User, home string) []byte {
	uid := strconv.Itoa(u.UID)
	for off := 0; off < len(host); {
		line, next := host[off:], len(host)
		if end := bytes.IndexByte(line, '\n'); end >= 0 {
			line, next = line[:end], off+end+1
		}
		// name:password:uid:gid:gecos:home:shell; only the uid's lines are split
		// (string(b) == s does not allocate)
		if string(passwdField(line, 2)) == uid {
			if f := bytes.Split(line, []byte{':'}); len(f) == 7 && len(f[0]) > 0 && f[0][0] != '+' && f[0][0] != '-' {
				if string(f[5]) == home {
					return nil
				}
				f[5] = []byte(home)
				out := make([]byte, 0, len(host)+len(home))
				out = append(out, host[:off]...)
				out = append(out, bytes.Join(f, []byte{':'})...)
				return append(out, host[off+len(line):]...)
			}
		}
		off = next
	}
	name := u.Name
	if name == "" || strings.ContainsAny(name, ":\n") {
		name = "user"
	}
	shell := u.Shell
	if shell == "" || strings.ContainsAny(shell, ":\n") {
		shell = "/bin/sh"
	}
	out := append([]byte(nil), host...)
	if len(out) > 0 && out[len(out)-1] != '\n' {
		out = append(out, '\n')
	}
	return fmt.Appendf(out, "%s:x:%d:%d:%s:%s:%s\n", name, u.UID, u.GID, name, home, shell)
}

// passwdField returns field n of a passwd line, nil when it has no field after it.
func passwdField(line []byte, n int) []byte {
	for ; n > 0; n-- {
		c := bytes.IndexByte(line, ':')
		if c < 0 {
			return nil
		}
		line = line[c+1:]
	}
	c := bytes.IndexByte(line, ':')
	if c < 0 {
		return nil
	}
	return line[:c]
}
