package planner

import (
	"fmt"
	"io/fs"
	"path"
	"strconv"
	"strings"
	"syscall"
)

// groupPath is the host's group database, read (with /etc/passwd) only to tell
// whether a group-writable directory on the way to a followed link is writable by
// the user's private group alone.
const groupPath = "/etc/group"

// safeHolders refuses a link, host, in a read-only bind of the Plan's whose source is
// root, when a directory holding it could let another host user swap it between this
// check and the mount: every directory from the one holding the link up to / (those
// above root could put another tree in the bind's place before it is opened). Each
// must be owned by root or the user (its owner can chmod it) and writable by nobody
// else: not by others, and by its group only when that is the user's private group
// (groupWriter). A sticky one is safe whoever may write it when what it holds on
// the way (the next directory, or the link) is root's or the user's, which then only
// they can rename or remove.
func (r *linkResolver) safeHolders(root, host string) error {
	entry := host
	for d := path.Dir(host); ; d = path.Dir(d) {
		where := fmt.Sprintf("%s, which holds the link %s on the way,", d, host)
		risk := "swap the link before the mount is placed"
		if d != root && !strings.HasPrefix(d, root+"/") {
			where = fmt.Sprintf("%s, above %s (the read-only bind holding the link %s),", d, root, host)
			risk = "put another directory in place of " + root + " before it is mounted"
		}
		if err := r.safeHolder(d, entry, where, risk); err != nil {
			return err
		}
		if d == "/" || d == "." {
			return nil
		}
		entry = d
	}
}

// safeHolder is safeHolders' rule for one directory d, holding entry on the way;
// where names d in an error, risk says what another user who can write d could do.
func (r *linkResolver) safeHolder(d, entry, where, risk string) error {
	fi, err := r.lstat(d)
	if err != nil {
		return fmt.Errorf("%w: %s: %w", errViewLink, strings.TrimSuffix(where, ","), err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("%w: %s is no longer a directory (mode %s): it changed while devsandbox looked; run again, or use the path the link leads to instead", errViewLink, where, fi.Mode())
	}
	if !r.ownedByUs(fi) {
		return fmt.Errorf("%w: %s is owned neither by root nor by you, so its owner could %s; use the path the link leads to instead, or own the directory", errViewLink, where, risk)
	}
	mode := fi.Mode()
	// With an ACL the group bits are its mask, which every entry but the owner's
	// and others' is limited by (acl(5)): without them nobody else can write.
	if mode.Perm()&0o022 == 0 {
		return nil
	}
	if mode&fs.ModeSticky != 0 {
		if efi, err := r.lstat(entry); err == nil && r.ownedByUs(efi) {
			return nil // sticky: only root or the user can rename or remove it
		}
	}
	if mode.Perm()&0o002 == 0 {
		who, why, fix, err := r.groupWriter(d, fi)
		switch {
		case err != nil:
			return fmt.Errorf("%w: %s is writable by its group (mode %s), and %w; remove the group's write access (chmod g-w %s), or use the path the link leads to instead", errViewLink, where, mode.Perm(), err, d)
		case who == "":
			return nil
		case why != "":
			why = ", " + why
		}
		return fmt.Errorf("%w: %s is writable by %s (mode %s)%s: another user could %s; remove that write access (chmod go-w %s%s), or use the path the link leads to instead", errViewLink, where, who, mode.Perm(), why, risk, d, fix)
	}
	return fmt.Errorf("%w: %s is writable by other users (mode %s), who could %s; remove their write access (chmod go-w %s), or use the path the link leads to instead", errViewLink, where, mode.Perm(), risk, d)
}

// groupWriter names who, besides the user, may write the group-writable directory
// d through its group class, why that is not the user alone, and the setfacl part of
// the fix; who is "" when that is the user's private group alone (and the user).
// Without an ACL it is d's group; with one, each entry that grants write once the
// mask applies: a named user other than the user or root, a named group or the
// owning group that is not the user's private group (privateGroup). An error means
// the answer is unknown (an ACL that cannot be read), which refuses.
func (r *linkResolver) groupWriter(d string, fi fs.FileInfo) (who, why, fix string, err error) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return "", "", "", fmt.Errorf("its group is unknown")
	}
	var w aclWriters
	raw, err := r.acl(d)
	switch {
	case err != nil:
		return "", "", "", fmt.Errorf("its ACL cannot be read: %w", err)
	case raw == nil:
		w.groupObj = true
	default:
		if w, err = parseACLWriters(raw); err != nil {
			return "", "", "", fmt.Errorf("its ACL cannot be read (%w)", err)
		}
	}
	if w.other {
		return "other users through its ACL", "", "; setfacl -m o::r-x " + d, nil
	}
	for _, u := range w.users {
		if u != 0 && (r.uid < 0 || u != uint32(r.uid)) {
			return fmt.Sprintf("the user with uid %d through its ACL", u), "", fmt.Sprintf("; setfacl -x u:%d %s", u, d), nil
		}
	}
	for _, g := range w.groups {
		if why := r.privateGroup(g); why != "" {
			return fmt.Sprintf("the group %s through its ACL", r.groupName(g)), why, fmt.Sprintf("; setfacl -x g:%d %s", g, d), nil
		}
	}
	if w.groupObj {
		if why := r.privateGroup(st.Gid); why != "" {
			return "its group " + r.groupName(st.Gid), why, "", nil
		}
	}
	return "", "", "", nil
}

// ownedByUs reports whether root or the user owns fi.
func (r *linkResolver) ownedByUs(fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && (st.Uid == 0 || (r.uid >= 0 && st.Uid == uint32(r.uid)))
}

// userGroup is the user's primary group as the host's files show it (found): its
// gid, and why it is not the user's alone ("" when it is).
type userGroup struct {
	gid   uint32
	found bool
	why   string
	names map[uint32]string // every group's name, for messages
}

// privateGroup returns "" when gid is the user's private group, else a clause saying
// why it is not shown to be. The files are read once per resolver, when first asked.
func (r *linkResolver) privateGroup(gid uint32) string {
	if r.group == nil {
		g := readUserGroup(r.read, r.uid)
		r.group = &g
	}
	if r.group.found && r.group.gid != gid {
		return fmt.Sprintf("which is not your primary group (%s)", r.groupName(r.group.gid))
	}
	return r.group.why
}

// groupName is gid's name in /etc/group, else the number.
func (r *linkResolver) groupName(gid uint32) string {
	if r.group != nil {
		if n := r.group.names[gid]; n != "" {
			return n
		}
	}
	return strconv.FormatUint(uint64(gid), 10)
}

// readUserGroup works out whether the primary group of uid, in /etc/passwd, is that
// user's alone: /etc/group lists it and no member but the user's names, and no other
// /etc/passwd entry has it as primary group. What the files cannot show (the user or
// the group missing, a line that cannot be read, NIS's +/- lines) is not the user's
// alone. Other name services (LDAP, sssd) are not asked: whoever controls them can as
// well give another account the user's uid, which the owner checks trust too.
func readUserGroup(read func(string) ([]byte, error), uid int) userGroup {
	g := userGroup{names: map[uint32]string{}}
	passwd, err := read("/etc/passwd")
	if err != nil {
		g.why = fmt.Sprintf("which devsandbox cannot show to be yours alone (reading /etc/passwd: %v)", err)
		return g
	}
	group, err := read(groupPath)
	if err != nil {
		g.why = fmt.Sprintf("which devsandbox cannot show to be yours alone (reading %s: %v)", groupPath, err)
		return g
	}
	type account struct {
		name     string
		uid, gid uint32
	}
	var accounts []account
	mine := map[string]bool{}
	for n, line := range dbLines(passwd) {
		f := strings.Split(line, ":")
		u, uerr := strconv.ParseUint(fieldAt(f, 2), 10, 32)
		gid, gerr := strconv.ParseUint(fieldAt(f, 3), 10, 32)
		if line[0] == '+' || line[0] == '-' || len(f) != 7 || uerr != nil || gerr != nil {
			g.why = fmt.Sprintf("which devsandbox cannot show to be yours alone (line %d of /etc/passwd is not a plain entry)", n)
			return g
		}
		a := account{f[0], uint32(u), uint32(gid)}
		accounts = append(accounts, a)
		if uid >= 0 && a.uid == uint32(uid) {
			mine[a.name] = true
			if !g.found {
				g.gid, g.found = a.gid, true
			}
		}
	}
	if !g.found {
		g.why = "which devsandbox cannot show to be yours alone (your account is not in /etc/passwd)"
		return g
	}
	listed := false
	for n, line := range dbLines(group) {
		f := strings.Split(line, ":")
		gid, err := strconv.ParseUint(fieldAt(f, 2), 10, 32)
		if line[0] == '+' || line[0] == '-' || len(f) != 4 || err != nil {
			g.why = fmt.Sprintf("which devsandbox cannot show to be yours alone (line %d of %s is not a plain entry)", n, groupPath)
			return g
		}
		if _, ok := g.names[uint32(gid)]; !ok {
			g.names[uint32(gid)] = f[0]
		}
		if uint32(gid) != g.gid {
			continue
		}
		listed = true
		for _, m := range strings.Split(f[3], ",") {
			if m = strings.TrimSpace(m); m != "" && !mine[m] && g.why == "" {
				g.why = fmt.Sprintf("which %s lists with the member %s", groupPath, m)
			}
		}
	}
	if !listed {
		g.why = fmt.Sprintf("which devsandbox cannot show to be yours alone (%s does not list it)", groupPath)
		return g
	}
	for _, a := range accounts {
		if a.gid == g.gid && a.uid != uint32(uid) && g.why == "" {
			g.why = fmt.Sprintf("which is the primary group of the user %s too", a.name)
		}
	}
	return g
}

// dbLines yields the entries of a colon-separated database file (/etc/passwd,
// /etc/group) with their line numbers: not blank lines or # comments.
func dbLines(b []byte) func(yield func(int, string) bool) {
	return func(yield func(int, string) bool) {
		for n, line := range strings.Split(string(b), "\n") {
			line = strings.TrimSpace(line)
			if line == "" || line[0] == '#' {
				continue
			}
			if !yield(n+1, line) {
				return
			}
		}
	}
}

// fieldAt is f[i], or "" when f is shorter.
func fieldAt(f []string, i int) string {
	if i < len(f) {
		return f[i]
	}
	return ""
}
