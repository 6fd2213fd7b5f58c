package planner

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"github.com/devsandbox/devsandbox/isolator"
)

// sandboxPasswd returns the /etc/passwd a sandbox with the system view v should see
// in place of the host's (isolator.SystemView.Passwd), or nil when the host's is right.
// OpenSSH (~/.ssh/config, known_hosts, identities), `~user` in shells and a few
// other programs take the home from the passwd entry (getpwuid), not $HOME: when the
// host user's HOME is not the home their entry names (a CI runner, `sudo -u`,
// `HOME=/elsewhere devsandbox`), the sandbox's $HOME, where the tools' files are,
// would not be the home those programs read. The copy is the host's with the first
// entry of u.UID naming u.HostHome, or with such an entry added when the host has
// none. Only a view that shows the host's file needs one; the containers write their
// own (container.UserFiles).
func sandboxPasswd(pr Probe, v isolator.SystemView, u isolator.User) []byte {
	if !v.Host && !showsPasswd(v.Paths) {
		return nil
	}
	if strings.ContainsAny(u.HostHome, ":\n") {
		return nil // not a home a passwd entry can name
	}
	// Through ReadRegular (raw system calls, no os.File): it is read on every launch.
	host, err := pr.readWritable(isolator.PasswdPath, true)
	if err != nil {
		return nil // none to show, or the sandbox's view fails to place it anyway
	}
	return passwdWithHome(host, u)
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

// passwdWithHome returns host (an /etc/passwd) with the home of u's entry, the first
// with u.UID, set to u.HostHome, or with an entry for u appended when there is none;
// nil when the entry names that home already.
func passwdWithHome(host []byte, u isolator.User) []byte {
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
				if string(f[5]) == u.HostHome {
					return nil
				}
				f[5] = []byte(u.HostHome)
				out := make([]byte, 0, len(host)+len(u.HostHome))
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
	return fmt.Appendf(out, "%s:x:%d:%d:%s:%s:%s\n", name, u.UID, u.GID, name, u.HostHome, shell)
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
