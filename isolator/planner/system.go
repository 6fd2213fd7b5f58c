package planner

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"

	"github.com/devsandbox/devsandbox/isolator"
)

// minimalSystem is the default system view, read-only.
var minimalSystem = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt"}

// minimalEtc are the /etc entries that DNS, TLS, users, locale, the dynamic linker and
// common tools need.
var minimalEtc = []string{
	// DNS and name service
	"/etc/resolv.conf", "/etc/hosts", "/etc/host.conf", "/etc/nsswitch.conf", "/etc/gai.conf", "/etc/hostname",
	// TLS
	"/etc/ssl", "/etc/pki", "/etc/crypto-policies", // not /etc/ca-certificates: only update-ca-certificates reads it
	// users and groups
	"/etc/passwd", "/etc/group",
	// locale and time
	"/etc/localtime", "/etc/timezone", "/etc/locale.conf", "/etc/locale.alias", "/etc/default/locale",
	// dynamic linker and program alternatives
	"/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/alternatives",
	// shells and terminals
	"/etc/shells", "/etc/profile", "/etc/profile.d", "/etc/bash.bashrc", "/etc/inputrc", "/etc/terminfo",
	"/etc/environment", "/etc/mime.types",
	// tools
	"/etc/gitconfig", "/etc/ssh/ssh_config", "/etc/ssh/ssh_config.d",
	// language runtimes: Debian's JDKs link their conf/ files (java.security, ...) here
	"/etc/java-8-openjdk", "/etc/java-11-openjdk", "/etc/java-17-openjdk", "/etc/java-21-openjdk", "/etc/java-25-openjdk",
}

// maxCopies caps how many files of one /etc directory are copied one by one before it
// is bind-mounted instead. A bind mount costs bwrap a remount and a mountinfo scan at
// setup and the kernel an unmount at teardown; a copy of a small file costs far less.
// Symlink farms (alternatives, certificate hashes) stay bind mounts: recreating
// hundreds of links costs more than the mount.
const maxCopies = 32

// systemView returns the system part of the view: binds = ["host"] is the read-only
// host root; an empty list is the minimal default; anything else are the paths given.
// The minimal default's copied /etc files are snapshotted under snapshots.
// from names an entry of binds in errors (entryFrom), nil for the key alone.
func systemView(pr Probe, binds []string, snapshots string, from func(key, value string) string) (isolator.SystemView, error) {
	if len(binds) == 1 && binds[0] == "host" {
		return isolator.SystemView{Host: true}, nil
	}
	var v isolator.SystemView
	if len(binds) > 0 {
		for _, sp := range binds {
			if !pr.exists(sp) {
				what := "sandbox.system_binds"
				if from != nil {
					what = from(what, sp)
				}
				return v, fmt.Errorf("%w: %s: %s does not exist; remove it from the list", ErrConfig, what, sp)
			}
			v.Paths = append(v.Paths, systemEntry(pr, sp, false))
		}
		return placeBelowLinks(v), nil
	}
	for _, sp := range minimalSystem {
		fi, err := pr.Lstat(sp)
		if err != nil {
			continue
		}
		if fi.IsDir() {
			if ents, err := pr.readDirN(sp, 1); err == nil && len(ents) == 0 {
				continue // an empty /opt needs no mount
			}
		}
		v.Paths = append(v.Paths, systemEntry(pr, sp, true))
	}
	for _, sp := range minimalEtc {
		st, err := pr.Stat(sp) // /etc symlinks (resolv.conf) resolve to what is wanted
		switch {
		case err != nil:
			continue
		case st.Mode().IsRegular():
			v.Paths = append(v.Paths, isolator.SystemPath{Path: sp, Optional: true, Copy: true})
		case st.IsDir():
			if entries, ok := copyDir(pr, sp); ok {
				v.Paths = append(v.Paths, entries...)
			} else {
				v.Paths = append(v.Paths, isolator.SystemPath{Path: sp, Optional: true})
			}
		}
	}
	for _, sp := range v.Paths {
		if sp.Copy {
			v.Snapshot = snapshots
			break
		}
	}
	return v, nil
}

// systemEntry is a bind of p, or a symlink when p is one.
func systemEntry(pr Probe, p string, optional bool) isolator.SystemPath {
	e := isolator.SystemPath{Path: p, Optional: optional}
	if fi, err := pr.Lstat(p); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		if t, err := pr.Readlink(p); err == nil {
			e.Link = t
		}
	}
	return e
}

// copyDir returns dir as copies of its files when it holds only regular files, at
// most maxCopies of them.
func copyDir(pr Probe, dir string) ([]isolator.SystemPath, bool) {
	ents, err := pr.readDirN(dir, maxCopies+1)
	if err != nil || len(ents) > maxCopies {
		return nil, false
	}
	sort.Slice(ents, func(i, j int) bool { return ents[i].Name() < ents[j].Name() })
	var out []isolator.SystemPath
	for _, e := range ents {
		if !e.Type().IsRegular() {
			return nil, false
		}
		out = append(out, isolator.SystemPath{Path: filepath.Join(dir, e.Name()), Optional: true, Copy: true})
	}
	return out, true
}

// placeBelowLinks places each listed path that lies below a listed link (/lib ->
// usr/lib with /lib/x86_64-linux-gnu) where the link leads, as the host resolves its
// source: bubblewrap would make the directory on the way, then fail to make the link
// ("Can't make symlink at /lib: File exists"). A path that then lies in a listed
// directory, or repeats one, is shown by it already and left out.
func placeBelowLinks(v isolator.SystemView) isolator.SystemView {
	at := func(p string) string {
		for hops := 0; hops <= maxLinkHops; hops++ {
			moved := false
			for _, l := range v.Paths {
				if l.Link == "" || l.Path == p || !isolator.Within(p, l.Path) {
					continue
				}
				t := l.Link
				if !filepath.IsAbs(t) {
					t = filepath.Join(filepath.Dir(l.Path), t)
				}
				p, moved = filepath.Join(t, strings.TrimPrefix(p, l.Path)), true
				break
			}
			if !moved {
				break
			}
		}
		return p
	}
	out := v.Paths[:0:0]
	for i, sp := range v.Paths {
		sp.Path = at(sp.Path)
		shown := false
		for j, o := range v.Paths {
			if j != i && o.Link == "" && !o.Copy && (sp.Path != o.Path && isolator.Within(sp.Path, o.Path) || sp.Path == o.Path && j < i) {
				shown = true
			}
		}
		if !shown {
			out = append(out, sp)
		}
	}
	v.Paths = out
	return v
}
