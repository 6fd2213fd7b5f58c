package planner

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/tools"
)

// linkInfo is the lstat of a fake host path: a directory, or a link owned by uid
// (and gid).
type linkInfo struct {
	link     bool
	uid, gid uint32
	perm     fs.FileMode // a directory's, with fs.ModeSticky; 0755 when 0
}

func (i linkInfo) Name() string       { return "" }
func (i linkInfo) Size() int64        { return 0 }
func (i linkInfo) ModTime() time.Time { return time.Time{} }
func (i linkInfo) IsDir() bool        { return !i.link }
func (i linkInfo) Sys() any           { return &syscall.Stat_t{Uid: i.uid, Gid: i.gid} }
func (i linkInfo) Mode() fs.FileMode {
	if i.link {
		return fs.ModeSymlink | 0o777
	}
	if i.perm != 0 {
		return fs.ModeDir | i.perm
	}
	return fs.ModeDir | 0o755
}

// linkHost is a fake host: every path exists (a directory) except those under a
// missing prefix; links maps a link to its target, owned by root unless in userLinks
// (uid 1000, the plan's user) or otherLinks (uid 1001). acls holds directories' access
// ACLs (none when absent, an error for a nil value), files /etc/passwd and /etc/group
// (hostAccounts' when absent, unreadable for an empty value).
type linkHost struct {
	links      map[string]string
	userLinks  map[string]bool
	otherLinks map[string]bool
	dirs       map[string]linkInfo // a directory's owner and mode, root's 0755 when absent
	acls       map[string][]byte
	files      map[string]string
	missing    []string
	asked      []string
	read       []string // the files read, and the ACLs asked for ("acl DIR")
}

// hostAccounts is the fake host's /etc/passwd and /etc/group: the plan's user u
// (1000) with its private group, bob (1001) with his, and devs (2000), shared.
var hostAccounts = map[string]string{
	"/etc/passwd": "root:x:0:0:root:/root:/bin/sh\nu:x:1000:1000::/home/u:/bin/sh\nbob:x:1001:1001::/home/bob:/bin/sh\n",
	"/etc/group":  "# groups\nroot:x:0:\nu:x:1000:\nbob:x:1001:\ndevs:x:2000:u,bob\n",
}

func (h *linkHost) viewHost() viewHost {
	return viewHost{lstat: h.lstat, readlink: h.readlink, acl: h.acl, read: h.readFile}
}

func (h *linkHost) acl(dir string) ([]byte, error) {
	h.read = append(h.read, "acl "+dir)
	b, ok := h.acls[dir]
	if ok && b == nil {
		return nil, fs.ErrPermission
	}
	return b, nil
}

func (h *linkHost) readFile(p string) ([]byte, error) {
	h.read = append(h.read, p)
	s, ok := h.files[p]
	if !ok {
		s, ok = hostAccounts[p]
	}
	if !ok || s == "" {
		return nil, fs.ErrPermission
	}
	return []byte(s), nil
}

func (h *linkHost) lstat(p string) (fs.FileInfo, error) {
	h.asked = append(h.asked, p)
	for _, m := range h.missing {
		if isolator.Within(p, m) {
			return nil, fs.ErrNotExist
		}
	}
	if _, ok := h.links[p]; ok {
		uid := uint32(0)
		if h.userLinks[p] {
			uid = 1000
		}
		if h.otherLinks[p] {
			uid = 1001
		}
		return linkInfo{link: true, uid: uid}, nil
	}
	return h.dirs[p], nil
}

func (h *linkHost) readlink(p string) (string, error) {
	if t, ok := h.links[p]; ok {
		return t, nil
	}
	return "", fs.ErrInvalid
}

func roBind(dir string) isolator.Mount {
	return isolator.Mount{Kind: isolator.Bind, Source: dir, Dest: dir, ReadOnly: true, Why: "sandbox.ro_binds"}
}

func mask(dst, why string) isolator.Mount {
	return isolator.Mount{Kind: isolator.MaskFile, Dest: dst, Why: why}
}

// TestResolveViewLinks: each destination is placed where bubblewrap would place it,
// through the links of the view the host owns; one that repeats another is dropped;
// links the sandbox could have placed, or that move a home path, are refused.
func TestResolveViewLinks(t *testing.T) {
	debian := map[string]string{"/var/run": "/run", "/var/lock": "/run/lock", "/lib": "usr/lib"}
	hostView := isolator.SystemView{Host: true}
	minimal := isolator.SystemView{Paths: []isolator.SystemPath{{Path: "/usr"}, {Path: "/lib", Link: "usr/lib"}, {Path: "/bin", Link: "usr/bin"}}}
	home := isolator.Mount{Kind: isolator.Bind, Source: "/state/home", Dest: "/home/u", Why: "sandbox home"}
	proj := isolator.Mount{Kind: isolator.Bind, Source: "/home/u/src/app", Dest: "/home/u/src/app", Why: "project"}
	for _, tc := range []struct {
		name       string
		system     isolator.SystemView
		links      map[string]string
		userLinks  map[string]bool
		otherLinks map[string]bool
		dirs       map[string]linkInfo
		acls       map[string][]byte
		files      map[string]string
		reads      bool // the group files or an ACL may be read
		missing    []string
		mounts     []isolator.Mount
		want       []string // mountLines
		wantErr    string   // a part of the error; the error is ErrProtection
	}{
		{name: "host view: /var/run -> /run gives one docker socket mask", system: hostView, links: debian,
			mounts: []isolator.Mount{home, proj, mask("/run/docker.sock", "docker socket"), mask("/var/run/docker.sock", "docker socket")},
			want:   []string{"bind rw /state/home -> /home/u (sandbox home)", "bind rw /home/u/src/app -> /home/u/src/app (project)", "maskfile /run/docker.sock (docker socket)"}},
		{name: "host view: the socket through the link alone", system: hostView, links: debian,
			mounts: []isolator.Mount{mask("/var/run/docker.sock", "docker socket")},
			want:   []string{"maskfile /run/docker.sock (docker socket)"}},
		{name: "host view: /var/lock and merged-usr /lib", system: hostView, links: debian,
			mounts: []isolator.Mount{mask("/var/lock/x", "sandbox.hide_paths"), mask("/lib/x/y", "sandbox.hide_paths")},
			want:   []string{"maskfile /run/lock/x (sandbox.hide_paths)", "maskfile /usr/lib/x/y (sandbox.hide_paths)"}},
		{name: "host view: a link to a link", system: hostView, links: map[string]string{"/a": "/b", "/b/c": "../d"},
			mounts: []isolator.Mount{mask("/a/c/f", "x")},
			want:   []string{"maskfile /d/f (x)"}},
		{name: "host view: a final link", system: hostView, links: map[string]string{"/etc/mtab": "../proc/self/mounts"},
			mounts: []isolator.Mount{mask("/etc/mtab", "x")},
			want:   []string{"maskfile /proc/self/mounts (x)"}},
		{name: "host view: missing on the host is left", system: hostView, links: debian, missing: []string{"/srv"},
			mounts: []isolator.Mount{mask("/srv/a/b", "x")},
			want:   []string{"maskfile /srv/a/b (x)"}},
		{name: "a repetition with a mount over the first is kept", system: hostView, links: debian,
			mounts: []isolator.Mount{mask("/run/x/s", "a"), {Kind: isolator.TmpDir, Dest: "/run/x", Why: "t"}, mask("/var/run/x/s", "a")},
			want:   []string{"maskfile /run/x/s (a)", "tmpdir /run/x (t)", "maskfile /run/x/s (a)"}},
		{name: "minimal view: the view's own links", system: minimal,
			mounts: []isolator.Mount{mask("/bin/x", "x"), mask("/lib/y", "y")},
			want:   []string{"maskfile /usr/bin/x (x)", "maskfile /usr/lib/y (y)"}},
		{name: "minimal view: /var is not the host's", system: minimal, links: debian,
			mounts: []isolator.Mount{mask("/var/run/docker.sock", "docker socket")},
			want:   []string{"maskfile /var/run/docker.sock (docker socket)"}},
		{name: "system_binds list: a bound /var", system: isolator.SystemView{Paths: []isolator.SystemPath{{Path: "/usr"}, {Path: "/var"}}}, links: debian,
			mounts: []isolator.Mount{mask("/var/run/docker.sock", "docker socket")},
			want:   []string{"maskfile /run/docker.sock (docker socket)"}},
		{name: "links in a bind are not followed", system: hostView, links: map[string]string{"/home/u/src/app/l": "/etc"},
			mounts: []isolator.Mount{home, proj, mask("/home/u/src/app/l/x", "sandbox.mask_files")},
			want:   []string{"bind rw /state/home -> /home/u (sandbox home)", "bind rw /home/u/src/app -> /home/u/src/app (project)", "maskfile /home/u/src/app/l/x (sandbox.mask_files)"}},
		{name: "a link not owned by root is refused", system: hostView, links: map[string]string{"/opt/t": "/srv/t"}, userLinks: map[string]bool{"/opt/t": true},
			mounts: []isolator.Mount{mask("/opt/t/key", "x")}, wantErr: "/opt/t is not owned by root"},
		{name: "a link the sandbox can write is refused", system: hostView, links: map[string]string{"/srv/data/l": "/etc"},
			mounts:  []isolator.Mount{{Kind: isolator.Bind, Source: "/srv/data", Dest: "/mnt/data", Why: "sandbox.host_mounts"}, mask("/srv/data/l/x", "x")},
			wantErr: "/srv/data/l lies in /srv/data, which the sandbox can write"},
		{name: "a home behind a link is refused", system: hostView, links: map[string]string{"/home": "/data/home"},
			mounts: []isolator.Mount{home}, wantErr: "out of the home's place"},
		{name: "a home-relative destination behind a link is refused", system: hostView, links: map[string]string{"/home": "/data/home"},
			mounts: []isolator.Mount{{Kind: isolator.Bind, Source: "/x", HomeRel: ".x", Why: "tool"}}, wantErr: "out of the home's place"},
		{name: "a home behind a relative link stays (bubblewrap follows it in its root)", system: hostView, links: map[string]string{"/home": "var/home"},
			mounts: []isolator.Mount{home, proj, {Kind: isolator.MaskDir, HomeRel: ".ssh", Why: "sandbox.hide_paths"}},
			want:   []string{"bind rw /state/home -> /home/u (sandbox home)", "bind rw /home/u/src/app -> /home/u/src/app (project)", "maskdir ~/.ssh (sandbox.hide_paths)"}},
		{name: "a loop is refused", system: hostView, links: map[string]string{"/a": "/b", "/b": "/a"},
			mounts: []isolator.Mount{mask("/a/x", "x")}, wantErr: "more than 40 links"},
		// Links inside the Plan's read-only binds: the user's (or root's) are
		// followed where the sandbox cannot write them.
		{name: "ro bind: a user's absolute link is followed", system: minimal, links: map[string]string{"/home/u/tools/current": "/opt/x/v2"}, userLinks: map[string]bool{"/home/u/tools/current": true},
			mounts: []isolator.Mount{roBind("/home/u/tools"), roBind("/opt/x"), mask("/home/u/tools/current/secret", "x")},
			want:   []string{"bind ro /home/u/tools -> /home/u/tools (sandbox.ro_binds)", "bind ro /opt/x -> /opt/x (sandbox.ro_binds)", "maskfile /opt/x/v2/secret (x)"}},
		{name: "ro bind: a home-relative mask through the link is placed at the target", system: minimal, links: map[string]string{"/home/u/tools/current": "/home/u/opt/v2"}, userLinks: map[string]bool{"/home/u/tools/current": true},
			mounts: []isolator.Mount{home, roBind("/home/u/tools"), roBind("/home/u/opt"), {Kind: isolator.MaskFile, HomeRel: "tools/current/secret", Why: "sandbox.hide_paths"}},
			want:   []string{"bind rw /state/home -> /home/u (sandbox home)", "bind ro /home/u/tools -> /home/u/tools (sandbox.ro_binds)", "bind ro /home/u/opt -> /home/u/opt (sandbox.ro_binds)", "maskfile /home/u/opt/v2/secret (sandbox.hide_paths)"}},
		{name: "ro bind: a relative link and a later bind through it", system: minimal, links: map[string]string{"/srv/t/current": "v2"},
			mounts: []isolator.Mount{roBind("/srv/t"), {Kind: isolator.Bind, Source: "/x", Dest: "/srv/t/current/plug", ReadOnly: true, Why: "sandbox.host_mounts"}},
			want:   []string{"bind ro /srv/t -> /srv/t (sandbox.ro_binds)", "bind ro /x -> /srv/t/v2/plug (sandbox.host_mounts)"}},
		{name: "ro bind at another place: the link resolves in the sandbox's view", system: minimal, links: map[string]string{"/data/t/current": "v2"},
			mounts: []isolator.Mount{{Kind: isolator.Bind, Source: "/data/t", Dest: "/mnt/t", ReadOnly: true, Why: "sandbox.host_mounts"}, mask("/mnt/t/current/k", "x")},
			want:   []string{"bind ro /data/t -> /mnt/t (sandbox.host_mounts)", "maskfile /mnt/t/v2/k (x)"}},
		{name: "ro bind: a link of another user is refused", system: minimal, links: map[string]string{"/srv/t/current": "/opt/v2"}, otherLinks: map[string]bool{"/srv/t/current": true},
			mounts: []isolator.Mount{roBind("/srv/t"), mask("/srv/t/current/k", "x")}, wantErr: "/srv/t/current is owned neither by root nor by you"},
		// The directories from the bind's root to the link: another host user who
		// can write one could swap the link between the check and the mount.
		{name: "ro bind: a group-writable directory holding the link is refused", system: minimal, links: map[string]string{"/srv/t/a/current": "/opt/v2"}, userLinks: map[string]bool{"/srv/t/a/current": true},
			dirs: map[string]linkInfo{"/srv/t/a": {uid: 1000, perm: 0o775}}, reads: true,
			mounts: []isolator.Mount{roBind("/srv/t"), mask("/srv/t/a/current/k", "x")}, wantErr: "/srv/t/a, which holds the link /srv/t/a/current on the way, is writable by its group root (mode -rwxrwxr-x), which is not your primary group (u): another user could swap the link"},
		{name: "ro bind: a world-writable bind root above the link is refused", system: minimal, links: map[string]string{"/srv/t/a/current": "/opt/v2"}, userLinks: map[string]bool{"/srv/t/a/current": true},
			dirs:   map[string]linkInfo{"/srv/t": {uid: 1000, perm: 0o777}},
			mounts: []isolator.Mount{roBind("/srv/t"), mask("/srv/t/a/current/k", "x")}, wantErr: "/srv/t, which holds the link /srv/t/a/current on the way, is writable by other users"},
		{name: "ro bind: a directory of another user holding the link is refused", system: minimal, links: map[string]string{"/srv/t/current": "/opt/v2"}, userLinks: map[string]bool{"/srv/t/current": true},
			dirs:   map[string]linkInfo{"/srv/t": {uid: 1001}},
			mounts: []isolator.Mount{roBind("/srv/t"), mask("/srv/t/current/k", "x")}, wantErr: "/srv/t, which holds the link /srv/t/current on the way, is owned neither by root nor by you"},
		{name: "ro bind: a sticky world-writable directory holding the user's link is safe", system: minimal, links: map[string]string{"/srv/t/current": "/opt/v2"}, userLinks: map[string]bool{"/srv/t/current": true},
			dirs:   map[string]linkInfo{"/srv/t": {perm: 0o777 | fs.ModeSticky}},
			mounts: []isolator.Mount{roBind("/srv/t"), mask("/srv/t/current/k", "x")},
			want:   []string{"bind ro /srv/t -> /srv/t (sandbox.ro_binds)", "maskfile /opt/v2/k (x)"}},
		{name: "ro bind: a sticky directory holding another user's directory on the way is refused", system: minimal, links: map[string]string{"/srv/t/a/current": "/opt/v2"}, userLinks: map[string]bool{"/srv/t/a/current": true},
			dirs:   map[string]linkInfo{"/srv/t": {perm: 0o777 | fs.ModeSticky}, "/srv/t/a": {uid: 1001}},
			mounts: []isolator.Mount{roBind("/srv/t"), mask("/srv/t/a/current/k", "x")}, wantErr: "/srv/t/a, which holds the link /srv/t/a/current on the way, is owned neither by root nor by you"},
		// Above the bind's root: another user who can write there can put another
		// tree in the bind's place before it is opened (package pin, at launch).
		{name: "ro bind: a world-writable directory above the bind's root is refused", system: minimal, links: map[string]string{"/srv/t/current": "/opt/v2"}, userLinks: map[string]bool{"/srv/t/current": true},
			dirs:   map[string]linkInfo{"/srv": {perm: 0o777}},
			mounts: []isolator.Mount{roBind("/srv/t"), mask("/srv/t/current/k", "x")}, wantErr: "/srv, above /srv/t (the read-only bind holding the link /srv/t/current), is writable by other users (mode -rwxrwxrwx), who could put another directory in place of /srv/t before it is mounted; remove their write access (chmod go-w /srv)"},
		{name: "ro bind: a directory of another user above the bind's root is refused", system: minimal, links: map[string]string{"/srv/t/current": "/opt/v2"}, userLinks: map[string]bool{"/srv/t/current": true},
			dirs:   map[string]linkInfo{"/srv": {uid: 1001}},
			mounts: []isolator.Mount{roBind("/srv/t"), mask("/srv/t/current/k", "x")}, wantErr: "/srv, above /srv/t (the read-only bind holding the link /srv/t/current), is owned neither by root nor by you"},
		{name: "ro bind: a sticky directory above the bind's root holding the user's root is safe", system: minimal, links: map[string]string{"/srv/t/current": "/opt/v2"}, userLinks: map[string]bool{"/srv/t/current": true},
			dirs:   map[string]linkInfo{"/srv": {perm: 0o777 | fs.ModeSticky}, "/srv/t": {uid: 1000}},
			mounts: []isolator.Mount{roBind("/srv/t"), mask("/srv/t/current/k", "x")},
			want:   []string{"bind ro /srv/t -> /srv/t (sandbox.ro_binds)", "maskfile /opt/v2/k (x)"}},
		{name: "ro bind: a sticky directory above the bind's root holding another user's root is refused", system: minimal, links: map[string]string{"/srv/t/current": "/opt/v2"}, userLinks: map[string]bool{"/srv/t/current": true},
			dirs:   map[string]linkInfo{"/srv": {perm: 0o777 | fs.ModeSticky}, "/srv/t": {uid: 1001}},
			mounts: []isolator.Mount{roBind("/srv/t"), mask("/srv/t/current/k", "x")}, wantErr: "/srv/t, which holds the link /srv/t/current on the way, is owned neither by root nor by you"},
		{name: "ro bind: a link above the bind's root (changed since it was resolved) is refused", system: minimal, links: map[string]string{"/srv/t/current": "/opt/v2", "/srv": "/data"}, userLinks: map[string]bool{"/srv/t/current": true},
			mounts: []isolator.Mount{roBind("/srv/t"), mask("/srv/t/current/k", "x")}, wantErr: "/srv, above /srv/t (the read-only bind holding the link /srv/t/current), is no longer a directory"},
		// A group-writable directory: followed when the group is the user's
		// private group alone (umask 002 on Fedora), and its ACL grants write to
		// nobody else.
		{name: "upg: a directory writable by the user's private group is followed", system: minimal, links: map[string]string{"/srv/t/a/current": "/opt/v2"}, userLinks: map[string]bool{"/srv/t/a/current": true},
			dirs: map[string]linkInfo{"/srv/t/a": {uid: 1000, gid: 1000, perm: 0o775}, "/srv/t": {uid: 1000, gid: 1000, perm: 0o2775}}, reads: true,
			mounts: []isolator.Mount{roBind("/srv/t"), mask("/srv/t/a/current/k", "x")},
			want:   []string{"bind ro /srv/t -> /srv/t (sandbox.ro_binds)", "maskfile /opt/v2/k (x)"}},
		{name: "upg: the user named a member of the own group", system: minimal, links: map[string]string{"/srv/t/current": "/opt/v2"}, userLinks: map[string]bool{"/srv/t/current": true},
			dirs: map[string]linkInfo{"/srv/t": {uid: 1000, gid: 1000, perm: 0o775}}, reads: true, files: map[string]string{"/etc/group": "u:x:1000:u\n"},
			mounts: []isolator.Mount{roBind("/srv/t"), mask("/srv/t/current/k", "x")},
			want:   []string{"bind ro /srv/t -> /srv/t (sandbox.ro_binds)", "maskfile /opt/v2/k (x)"}},
		{name: "upg: root's directory writable by the user's private group above the root", system: minimal, links: map[string]string{"/srv/t/current": "/opt/v2"}, userLinks: map[string]bool{"/srv/t/current": true},
			dirs: map[string]linkInfo{"/srv": {gid: 1000, perm: 0o775}}, reads: true,
			mounts: []isolator.Mount{roBind("/srv/t"), mask("/srv/t/current/k", "x")},
			want:   []string{"bind ro /srv/t -> /srv/t (sandbox.ro_binds)", "maskfile /opt/v2/k (x)"}},
		{name: "upg: a shared group is refused", system: minimal, links: map[string]string{"/srv/t/current": "/opt/v2"}, userLinks: map[string]bool{"/srv/t/current": true},
			dirs: map[string]linkInfo{"/srv/t": {uid: 1000, gid: 2000, perm: 0o775}}, reads: true,
			mounts: []isolator.Mount{roBind("/srv/t"), mask("/srv/t/current/k", "x")}, wantErr: "/srv/t, which holds the link /srv/t/current on the way, is writable by its group devs (mode -rwxrwxr-x), which is not your primary group (u): another user could swap the link before the mount is placed; remove that write access (chmod go-w /srv/t)"},
		{name: "upg: the primary group with another member is refused", system: minimal, links: map[string]string{"/srv/t/current": "/opt/v2"}, userLinks: map[string]bool{"/srv/t/current": true},
			dirs: map[string]linkInfo{"/srv/t": {uid: 1000, gid: 1000, perm: 0o775}}, reads: true, files: map[string]string{"/etc/group": "u:x:1000:u,bob\n"},
			mounts: []isolator.Mount{roBind("/srv/t"), mask("/srv/t/current/k", "x")}, wantErr: "is writable by its group u (mode -rwxrwxr-x), which /etc/group lists with the member bob"},
		{name: "upg: the primary group of another account too is refused", system: minimal, links: map[string]string{"/srv/t/current": "/opt/v2"}, userLinks: map[string]bool{"/srv/t/current": true},
			dirs: map[string]linkInfo{"/srv/t": {uid: 1000, gid: 1000, perm: 0o775}}, reads: true, files: map[string]string{"/etc/passwd": hostAccounts["/etc/passwd"] + "eve:x:1002:1000::/home/eve:/bin/sh\n"},
			mounts: []isolator.Mount{roBind("/srv/t"), mask("/srv/t/current/k", "x")}, wantErr: "which is the primary group of the user eve too"},
		{name: "upg: a second entry of the gid with a member is refused", system: minimal, links: map[string]string{"/srv/t/current": "/opt/v2"}, userLinks: map[string]bool{"/srv/t/current": true},
			dirs: map[string]linkInfo{"/srv/t": {uid: 1000, gid: 1000, perm: 0o775}}, reads: true, files: map[string]string{"/etc/group": "u:x:1000:\nalias:x:1000:bob\n"},
			mounts: []isolator.Mount{roBind("/srv/t"), mask("/srv/t/current/k", "x")}, wantErr: "which /etc/group lists with the member bob"},
		{name: "upg: a group /etc/group does not list is refused", system: minimal, links: map[string]string{"/srv/t/current": "/opt/v2"}, userLinks: map[string]bool{"/srv/t/current": true},
			dirs: map[string]linkInfo{"/srv/t": {uid: 1000, gid: 1000, perm: 0o775}}, reads: true, files: map[string]string{"/etc/group": "root:x:0:\n"},
			mounts: []isolator.Mount{roBind("/srv/t"), mask("/srv/t/current/k", "x")}, wantErr: "which devsandbox cannot show to be yours alone (/etc/group does not list it)"},
		{name: "upg: a user /etc/passwd does not list is refused", system: minimal, links: map[string]string{"/srv/t/current": "/opt/v2"}, userLinks: map[string]bool{"/srv/t/current": true},
			dirs: map[string]linkInfo{"/srv/t": {uid: 1000, gid: 1000, perm: 0o775}}, reads: true, files: map[string]string{"/etc/passwd": "root:x:0:0:root:/root:/bin/sh\n"},
			mounts: []isolator.Mount{roBind("/srv/t"), mask("/srv/t/current/k", "x")}, wantErr: "(your account is not in /etc/passwd)"},
		{name: "upg: NIS entries are refused", system: minimal, links: map[string]string{"/srv/t/current": "/opt/v2"}, userLinks: map[string]bool{"/srv/t/current": true},
			dirs: map[string]linkInfo{"/srv/t": {uid: 1000, gid: 1000, perm: 0o775}}, reads: true, files: map[string]string{"/etc/group": "u:x:1000:\n+:::\n"},
			mounts: []isolator.Mount{roBind("/srv/t"), mask("/srv/t/current/k", "x")}, wantErr: "(line 2 of /etc/group is not a plain entry)"},
		{name: "upg: an unreadable /etc/group is refused", system: minimal, links: map[string]string{"/srv/t/current": "/opt/v2"}, userLinks: map[string]bool{"/srv/t/current": true},
			dirs: map[string]linkInfo{"/srv/t": {uid: 1000, gid: 1000, perm: 0o775}}, reads: true, files: map[string]string{"/etc/group": ""},
			mounts: []isolator.Mount{roBind("/srv/t"), mask("/srv/t/current/k", "x")}, wantErr: "(reading /etc/group: permission denied)"},
		{name: "upg: the private group and others writing is refused", system: minimal, links: map[string]string{"/srv/t/current": "/opt/v2"}, userLinks: map[string]bool{"/srv/t/current": true},
			dirs:   map[string]linkInfo{"/srv/t": {uid: 1000, gid: 1000, perm: 0o777}},
			mounts: []isolator.Mount{roBind("/srv/t"), mask("/srv/t/current/k", "x")}, wantErr: "is writable by other users (mode -rwxrwxrwx)"},
		// ACLs: the group bits are the mask; with write in it, each named entry
		// and the owning group's may write.
		{name: "acl: a named user's write on the private group's directory is refused", system: minimal, links: map[string]string{"/srv/t/current": "/opt/v2"}, userLinks: map[string]bool{"/srv/t/current": true},
			dirs: map[string]linkInfo{"/srv/t": {uid: 1000, gid: 1000, perm: 0o775}}, reads: true,
			acls:   map[string][]byte{"/srv/t": acl(aclObj(aclUserObj, 7), aclNamed(aclUser, 7, 1001), aclObj(aclGroupObj, 7), aclObj(aclMask, 7), aclObj(aclOther, 5))},
			mounts: []isolator.Mount{roBind("/srv/t"), mask("/srv/t/current/k", "x")}, wantErr: "/srv/t, which holds the link /srv/t/current on the way, is writable by the user with uid 1001 through its ACL (mode -rwxrwxr-x): another user could swap the link before the mount is placed; remove that write access (chmod go-w /srv/t; setfacl -x u:1001 /srv/t)"},
		{name: "acl: a named group's write is refused", system: minimal, links: map[string]string{"/srv/t/current": "/opt/v2"}, userLinks: map[string]bool{"/srv/t/current": true},
			dirs: map[string]linkInfo{"/srv/t": {uid: 1000, gid: 1000, perm: 0o775}}, reads: true,
			acls:   map[string][]byte{"/srv/t": acl(aclObj(aclUserObj, 7), aclObj(aclGroupObj, 5), aclNamed(aclGroup, 7, 2000), aclObj(aclMask, 7), aclObj(aclOther, 5))},
			mounts: []isolator.Mount{roBind("/srv/t"), mask("/srv/t/current/k", "x")}, wantErr: "is writable by the group devs through its ACL (mode -rwxrwxr-x), which is not your primary group (u): another user could swap the link before the mount is placed; remove that write access (chmod go-w /srv/t; setfacl -x g:2000 /srv/t)"},
		{name: "acl: a shared owning group whose entry lacks write, the user's own entry writing", system: minimal, links: map[string]string{"/srv/t/current": "/opt/v2"}, userLinks: map[string]bool{"/srv/t/current": true},
			dirs: map[string]linkInfo{"/srv/t": {uid: 1000, gid: 2000, perm: 0o775}}, reads: true,
			acls:   map[string][]byte{"/srv/t": acl(aclObj(aclUserObj, 7), aclNamed(aclUser, 7, 1000), aclObj(aclGroupObj, 5), aclNamed(aclGroup, 7, 1000), aclObj(aclMask, 7), aclObj(aclOther, 5))},
			mounts: []isolator.Mount{roBind("/srv/t"), mask("/srv/t/current/k", "x")},
			want:   []string{"bind ro /srv/t -> /srv/t (sandbox.ro_binds)", "maskfile /opt/v2/k (x)"}},
		{name: "acl: the owning group's write through the mask is refused for a shared group", system: minimal, links: map[string]string{"/srv/t/current": "/opt/v2"}, userLinks: map[string]bool{"/srv/t/current": true},
			dirs: map[string]linkInfo{"/srv/t": {uid: 1000, gid: 2000, perm: 0o775}}, reads: true,
			acls:   map[string][]byte{"/srv/t": acl(aclObj(aclUserObj, 7), aclNamed(aclUser, 7, 1000), aclObj(aclGroupObj, 7), aclObj(aclMask, 7), aclObj(aclOther, 5))},
			mounts: []isolator.Mount{roBind("/srv/t"), mask("/srv/t/current/k", "x")}, wantErr: "is writable by its group devs (mode -rwxrwxr-x), which is not your primary group (u)"},
		{name: "acl: named entries without write in the mask: the group bits say so, the ACL is not read", system: minimal, links: map[string]string{"/srv/t/current": "/opt/v2"}, userLinks: map[string]bool{"/srv/t/current": true},
			dirs:   map[string]linkInfo{"/srv/t": {uid: 1000, gid: 2000, perm: 0o755}},
			acls:   map[string][]byte{"/srv/t": acl(aclObj(aclUserObj, 7), aclNamed(aclUser, 7, 1001), aclObj(aclGroupObj, 7), aclObj(aclMask, 5), aclObj(aclOther, 5))},
			mounts: []isolator.Mount{roBind("/srv/t"), mask("/srv/t/current/k", "x")},
			want:   []string{"bind ro /srv/t -> /srv/t (sandbox.ro_binds)", "maskfile /opt/v2/k (x)"}},
		{name: "acl: an ACL that cannot be read is refused", system: minimal, links: map[string]string{"/srv/t/current": "/opt/v2"}, userLinks: map[string]bool{"/srv/t/current": true},
			dirs: map[string]linkInfo{"/srv/t": {uid: 1000, gid: 1000, perm: 0o775}}, reads: true, acls: map[string][]byte{"/srv/t": nil},
			mounts: []isolator.Mount{roBind("/srv/t"), mask("/srv/t/current/k", "x")}, wantErr: "/srv/t, which holds the link /srv/t/current on the way, is writable by its group (mode -rwxrwxr-x), and its ACL cannot be read: permission denied; remove the group's write access (chmod g-w /srv/t)"},
		{name: "acl: an ACL of an unknown form is refused", system: minimal, links: map[string]string{"/srv/t/current": "/opt/v2"}, userLinks: map[string]bool{"/srv/t/current": true},
			dirs: map[string]linkInfo{"/srv/t": {uid: 1000, gid: 1000, perm: 0o775}}, reads: true, acls: map[string][]byte{"/srv/t": {2, 0, 0, 0, 1}},
			mounts: []isolator.Mount{roBind("/srv/t"), mask("/srv/t/current/k", "x")}, wantErr: "its ACL cannot be read (an ACL of 5 bytes, not whole entries)"},
		{name: "ro bind: a link in a read-write bind inside it is refused", system: minimal, links: map[string]string{"/srv/t/w/current": "/opt/v2"}, userLinks: map[string]bool{"/srv/t/w/current": true},
			mounts:  []isolator.Mount{{Kind: isolator.Bind, Source: "/srv/t/w", Dest: "/elsewhere", Why: "sandbox.rw_binds"}, roBind("/srv/t"), mask("/srv/t/w/current/k", "x")},
			wantErr: "/srv/t/w/current lies in /srv/t/w, which the sandbox can write"},
		{name: "ro bind of a directory in the project: not looked into", system: minimal, links: map[string]string{"/home/u/src/app/vendor/current": "/opt/v2"}, userLinks: map[string]bool{"/home/u/src/app/vendor/current": true},
			mounts: []isolator.Mount{proj, roBind("/home/u/src/app/vendor"), mask("/home/u/src/app/vendor/current/k", "x")},
			want:   []string{"bind rw /home/u/src/app -> /home/u/src/app (project)", "bind ro /home/u/src/app/vendor -> /home/u/src/app/vendor (sandbox.ro_binds)", "maskfile /home/u/src/app/vendor/current/k (x)"}},
		{name: "rw bind: not looked into", system: minimal, links: map[string]string{"/srv/t/current": "/opt/v2"}, userLinks: map[string]bool{"/srv/t/current": true},
			mounts: []isolator.Mount{{Kind: isolator.Bind, Source: "/srv/t", Dest: "/srv/t", Why: "sandbox.rw_binds"}, mask("/srv/t/current/k", "x")},
			want:   []string{"bind rw /srv/t -> /srv/t (sandbox.rw_binds)", "maskfile /srv/t/current/k (x)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &linkHost{links: tc.links, userLinks: tc.userLinks, otherLinks: tc.otherLinks, dirs: tc.dirs, acls: tc.acls, files: tc.files, missing: tc.missing}
			p := &isolator.Plan{System: tc.system, Mounts: tc.mounts, User: isolator.User{HostHome: "/home/u", UID: 1000, GID: 1000},
				Project: isolator.Project{Dir: "/home/u/src/app"}, SandboxHome: "/state/home"}
			got, err := resolveViewLinks(p, h.viewHost())
			// The ACLs and the group files are read only for a group-writable
			// directory on the way to a followed link.
			if len(h.read) > 0 && !tc.reads {
				t.Errorf("read %v; want nothing read", h.read)
			}
			if tc.wantErr != "" {
				if !errors.Is(err, isolator.ErrProtection) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v; want ErrProtection with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			equalLines(t, "mounts", mountLines(got), tc.want)
		})
	}
}

// TestBuildHostViewDockerSockets: with system_binds = ["host"] on a host where /var/run
// links to /run, Build masks the Docker socket once, where both names lead.
func TestBuildHostViewDockerSockets(t *testing.T) {
	f := newFixture(t)
	cfg := f.load(t)
	cfg.Sandbox.SystemBinds = []string{"host"}
	pr := probe(f.proj)
	host := &linkHost{links: map[string]string{"/var/run": "/run"}}
	pr.Lstat = func(p string) (fs.FileInfo, error) {
		if p == "/run/docker.sock" || p == "/var/run/docker.sock" || p == "/var/run" {
			return host.lstat(p)
		}
		return probe(f.proj).Lstat(p)
	}
	pr.Stat = func(p string) (fs.FileInfo, error) {
		if p == "/run/docker.sock" || p == "/var/run/docker.sock" {
			return linkInfo{}, nil
		}
		return probe(f.proj).Stat(p)
	}
	pr.Readlink = func(p string) (string, error) {
		if p == "/var/run" {
			return host.readlink(p)
		}
		return probe(f.proj).Readlink(p)
	}
	p, _, err := Build(cfg, tools.Default(), pr, Request{Command: []string{"true"}, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	var socks []string
	for _, m := range p.Mounts {
		if m.Why == "docker socket" {
			socks = append(socks, m.Dest)
		}
	}
	equalLines(t, "docker socket masks", socks, []string{"/run/docker.sock"})
}

// TestPlaceBelowLinks: a listed system path below a listed link is placed where the
// link leads, and left out where a listed directory shows it already.
func TestPlaceBelowLinks(t *testing.T) {
	lib := isolator.SystemPath{Path: "/lib", Link: "usr/lib"}
	run := isolator.SystemPath{Path: "/var/run", Link: "/run"}
	for _, tc := range []struct {
		name     string
		in, want []isolator.SystemPath
	}{
		{"below a relative link, in a listed directory",
			[]isolator.SystemPath{{Path: "/usr"}, {Path: "/lib/x86_64-linux-gnu"}, lib},
			[]isolator.SystemPath{{Path: "/usr"}, lib}},
		{"below a relative link, on its own",
			[]isolator.SystemPath{{Path: "/lib/x86_64-linux-gnu"}, lib},
			[]isolator.SystemPath{{Path: "/usr/lib/x86_64-linux-gnu"}, lib}},
		{"below an absolute link",
			[]isolator.SystemPath{run, {Path: "/var/run/dbus"}},
			[]isolator.SystemPath{run, {Path: "/run/dbus"}}},
		{"a repetition once resolved",
			[]isolator.SystemPath{{Path: "/usr/lib/x"}, lib, {Path: "/lib/x"}},
			[]isolator.SystemPath{{Path: "/usr/lib/x"}, lib}},
		{"no link above", []isolator.SystemPath{{Path: "/usr"}, {Path: "/opt/x"}},
			[]isolator.SystemPath{{Path: "/usr"}, {Path: "/opt/x"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := placeBelowLinks(isolator.SystemView{Paths: tc.in}).Paths
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("placeBelowLinks(%v) = %v; want %v", tc.in, got, tc.want)
			}
		})
	}
}

// BenchmarkResolveViewLinks is what placing the destinations through the view's links
// adds to a launch, on the fixture's plan (the default tools, the host's files), in
// the minimal view and the host view.
func BenchmarkResolveViewLinks(b *testing.B) {
	for _, system := range [][]string{nil, {"host"}} {
		b.Run(fmt.Sprint(system), func(b *testing.B) {
			t := &testing.T{}
			f := newFixture(t)
			if t.Failed() {
				b.Fatal("fixture")
			}
			cfg := f.load(t)
			cfg.Sandbox.SystemBinds = system
			p, _, err := f.tryBuild(cfg)
			if err != nil {
				b.Fatal(err)
			}
			pr := probe(f.proj)
			for b.Loop() {
				if _, err := resolveViewLinks(p, pr.viewHost()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestBuildReadsNoGroupFiles: placing a mask through a link in a read-only bind asks
// for no ACL and reads no /etc/group where no directory on the way is group-writable
// (the default launch has no such link at all); /etc/passwd is read once per launch
// anyway (withPasswdOnce).
func TestBuildReadsNoGroupFiles(t *testing.T) {
	f := newFixture(t)
	mkdirs(t, f.root+"/tools", f.root+"/opt/v2")
	writeFile(t, f.root+"/opt/v2/secret", "s")
	if err := os.Symlink(f.root+"/opt/v2", f.root+"/tools/current"); err != nil {
		t.Fatal(err)
	}
	for _, bind := range []bool{false, true} {
		t.Run(fmt.Sprint("a followed link: ", bind), func(t *testing.T) {
			cfg := f.load(t)
			if bind {
				cfg.Sandbox.ROBinds = []string{f.root + "/tools", f.root + "/opt"}
				cfg.Sandbox.HidePaths = append(cfg.Sandbox.HidePaths, f.root+"/tools/current/secret")
			}
			pr := probe(f.proj)
			var asked []string
			pr.ACL = func(dir string) ([]byte, error) { asked = append(asked, "acl "+dir); return nil, nil }
			read := pr.ReadRegular
			pr.ReadRegular = func(p string, limit int64, follow bool) ([]byte, error) {
				if p == groupPath {
					asked = append(asked, p)
				}
				return read(p, limit, follow)
			}
			p, _, err := Build(cfg, tools.Default(), pr, Request{Command: []string{"true"}})
			if err != nil {
				t.Fatal(err)
			}
			if len(asked) > 0 {
				t.Fatalf("asked for %v; want nothing", asked)
			}
			if bind && !slices.ContainsFunc(p.Mounts, func(m isolator.Mount) bool { return m.Dest == f.root+"/opt/v2/secret" }) {
				t.Fatalf("no mask at the link's target:\n%s", strings.Join(mountLines(p.Mounts), "\n"))
			}
		})
	}
}
