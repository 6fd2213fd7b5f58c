// Package containerview computes what a Plan looks like from inside a container with
// its own home directory: where each mount lands and which stay visible, the
// command's environment, and the container's /etc/passwd and /etc/group. The docker
// and krun isolators share it; it imports neither engine's client.
package containerview

import (
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"

	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/isolator/shim/wire"
)

// Placed is a plan mount with its destination in the container.
type Placed struct {
	isolator.Mount
	Path string // the destination in the container
}

// VisibleMounts resolves each mount's destination (the sandbox home and home-relative
// mounts move to home) and drops every mount a later one covers. Engines sort mounts
// by depth, so without this a hidden bind below a later mask would reappear.
func VisibleMounts(p *isolator.Plan, home string) []Placed {
	var out []Placed
	for _, m := range p.Mounts {
		t := m.Target(home)
		if m.HomeRel == "" && m.Dest == p.User.HostHome && m.Source == p.SandboxHome {
			t = home
		}
		t = path.Clean(t)
		kept := out[:0]
		for _, o := range out {
			if !isolator.Within(o.Path, t) {
				kept = append(kept, o)
			}
		}
		out = append(kept, Placed{m, t})
	}
	return out
}

// MountPointsIn returns the names of dir's entries that later mounts create as their
// mount points.
func MountPointsIn(dir string, later []Placed) []string {
	var names []string
	for _, m := range later {
		if m.Path == dir || !isolator.Within(m.Path, dir) {
			continue
		}
		n, _, _ := strings.Cut(strings.TrimPrefix(m.Path, dir+"/"), "/")
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	return names
}

// Env is the command's environment: the Plan's, with the container's home and
// without PATH (containers use the image's).
func Env(p *isolator.Plan, home string) []isolator.EnvVar {
	var env []isolator.EnvVar
	hasHome := false
	for _, e := range p.Env {
		switch e.Name {
		case "PATH":
			continue
		case "HOME":
			e = isolator.EnvVar{Name: "HOME", Value: home}
			hasHome = true
		}
		env = append(env, e)
	}
	if !hasHome {
		env = append(env, isolator.EnvVar{Name: "HOME", Value: home})
		sort.Slice(env, func(i, j int) bool { return env[i].Name < env[j].Name })
	}
	return env
}

// UserFiles returns /etc/passwd and /etc/group for the container: root, nobody and
// the host user with the container's home, so git and ssh find a name and a home.
func UserFiles(u isolator.User, home string) (passwd, group []byte) {
	var pw, gr strings.Builder
	name := u.Name
	if name == "" {
		name = "user"
	}
	if u.UID != 0 {
		pw.WriteString("root:x:0:0:root:/root:/bin/sh\n")
	}
	if u.UID != 65534 {
		pw.WriteString("nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n")
	}
	fmt.Fprintf(&pw, "%s:x:%d:%d:%s:%s:/bin/sh\n", name, u.UID, u.GID, name, home)
	if u.GID != 0 {
		gr.WriteString("root:x:0:\n")
	}
	if u.GID != 65534 {
		gr.WriteString("nogroup:x:65534:\n")
	}
	fmt.Fprintf(&gr, "%s:x:%d:\n", name, u.GID)
	return []byte(pw.String()), []byte(gr.String())
}

// Identify adds to c the identity of the file m mounts (isolator.Mount.ID), which the
// init compares with what it finds at the destination.
func Identify(c wire.Check, m Placed) wire.Check {
	if m.ID != nil {
		c.Dev, c.Ino = m.ID.Dev, m.ID.Ino
	}
	return c
}
