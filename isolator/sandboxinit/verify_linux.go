package sandboxinit

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/devsandbox/devsandbox/egress/netfilter/probe"

	"github.com/devsandbox/devsandbox/isolator/sandboxinit/wire"
)

// Verify checks that every protection of the manifest is in effect in this process's
// view (DESIGN guarantee 9): container engines have ways to fail open (a mount
// skipped, a read-only flag lost), so the init looks before it runs the command.
// files are the secret files written into m.SecretDir, checked for mode and length.
func Verify(m *wire.Manifest, files map[string][]byte) error {
	if err := VerifyView(m); err != nil {
		return err
	}
	return VerifySession(m, files)
}

// VerifyView is the part of Verify that needs nothing of the session's: the
// process's privileges and the view (m's checks). The container init runs it before
// it reads the host's hello, while the hello is on its way.
func VerifyView(m *wire.Manifest) error {
	if err := verifyPrivileges(m.ContainerRoot); err != nil {
		return err
	}
	same := sameKernel(m.BootID)
	for _, c := range m.Checks {
		if err := verifyCheck(c, same); err != nil {
			if m.ProbeReadOnly && errors.Is(err, errWritable) && readOnlyByProbe(c.Path) {
				continue
			}
			return err
		}
	}
	return nil
}

// VerifySession is the rest of Verify, run once the session's hello arrived: the
// secret files written from it (files), and the network, whose egress rules (egress
// allowlist) the host applies before it sends the hello.
func VerifySession(m *wire.Manifest, files map[string][]byte) error {
	for name, data := range files {
		p := m.SecretDir + "/" + name
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			return fmt.Errorf("secret file %s: %v", p, err)
		}
		if st.Mode&unix.S_IFMT != unix.S_IFREG || st.Mode&0o7777 != 0o400 || int(st.Uid) != os.Getuid() || st.Size != int64(len(data)) {
			return fmt.Errorf("secret file %s is not a 0400 file of %d bytes owned by uid %d (mode %o, %d bytes, uid %d)", p, len(data), os.Getuid(), st.Mode&0o7777, st.Size, st.Uid)
		}
	}
	if m.SecretDir != "" && len(files) > 0 {
		if err := readOnlyForOthers(m.SecretDir); err != nil {
			return err
		}
	}
	switch m.Network {
	case "none":
		if err := verifyNoNetwork(); err != nil {
			return err
		}
	case "firewall":
		if err := verifyFirewall(m.EgressProbe); err != nil {
			return err
		}
	}
	return nil
}

// verifyFirewall checks that the egress rules are in force (the probe rule refuses a
// datagram). addr "" skips the check: a microVM's guest cannot see the rules of the
// host side's namespace.
func verifyFirewall(addr string) error {
	if addr == "" {
		return nil
	}
	return probe.Check(addr)
}

// VerifyMounts checks that each of checks is in effect (the bwrap init's part of
// Verify: bubblewrap needs no check of its read-only flags or capabilities, only that
// what it mounted is what the host opened, where it was meant to be). The bwrap init
// runs on the host's kernel (bubblewrap is a process of the host's), so the device
// and inode numbers the host pinned are always compared: it reads no boot id, whose
// lookup in the sandbox's new /proc builds every directory on the way to it.
func VerifyMounts(checks []wire.Check) error {
	for _, c := range checks {
		if err := verifyCheck(c, true); err != nil {
			return err
		}
	}
	return nil
}

// sameKernel reports whether this process runs on the kernel whose boot id is id
// (the container init's question: an engine may run elsewhere). It reads the file
// with plain system calls: os.ReadFile would set up the runtime's network poller for
// it (procfs files are pollable).
func sameKernel(id string) bool {
	if id == "" {
		return false
	}
	fd, err := unix.Open("/proc/sys/kernel/random/boot_id", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	var b [64]byte
	n, err := unix.Read(fd, b[:])
	return err == nil && n > 0 && strings.TrimSpace(string(b[:n])) == id
}

// verifyIdentity checks that c.Path leads, without a symlink on the way, to the file
// the host pinned (compared when same says the numbers are comparable). It returns an
// O_PATH descriptor of that file, which the caller closes, and its stat: the file the
// path led to, for the rest of the check.
func verifyIdentity(c wire.Check, same bool, st *unix.Stat_t) (int, error) {
	fd, parent, err := openNoFollow(c.Path)
	if err != nil {
		return -1, fmt.Errorf("%s %s cannot be reached without following a symlink: %v (a directory on the way may have been swapped for one while the sandbox was set up: run again; a mount whose destination lies below a symlink needs a destination without one)", c.Kind, c.Path, err)
	}
	defer unix.Close(parent)
	if err := identify(c, same, fd, parent, st); err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

// identify is verifyIdentity's check of fd, opened from the directory parent.
func identify(c wire.Check, same bool, fd, parent int, st *unix.Stat_t) error {
	if err := unix.Fstat(fd, st); err != nil {
		return fmt.Errorf("%s %s: %v", c.Kind, c.Path, err)
	}
	if !same {
		return nil
	}
	if uint64(st.Dev) != c.Dev || st.Ino != c.Ino {
		return fmt.Errorf("%s %s is not the file devsandbox opened for it (device %d inode %d, want %d %d): a path changed while the sandbox was set up; run again", c.Kind, c.Path, st.Dev, st.Ino, c.Dev, c.Ino)
	}
	// A bind of a path onto itself shows the same file whether or not the mount is
	// there: it must be a mount's root, or the mount went where a swapped directory
	// led (and shows its source there).
	m, err1 := mountID(fd)
	pm, err2 := mountID(parent)
	if err1 != nil || err2 != nil {
		return fmt.Errorf("%s %s: telling whether it is mounted: %v", c.Kind, c.Path, errors.Join(err1, err2))
	}
	if m == pm {
		return fmt.Errorf("%s %s is not a mount point: the mount went elsewhere (a directory on the way may have been swapped while the sandbox was set up); run again", c.Kind, c.Path)
	}
	return nil
}

// mountID returns the id of the mount fd is on: statx's, or /proc's on a kernel
// older than 5.8.
func mountID(fd int) (uint64, error) {
	var x unix.Statx_t
	if err := unix.Statx(fd, "", unix.AT_EMPTY_PATH|unix.AT_SYMLINK_NOFOLLOW, unix.STATX_MNT_ID, &x); err == nil && x.Mask&unix.STATX_MNT_ID != 0 {
		return x.Mnt_id, nil
	}
	b, err := os.ReadFile("/proc/self/fdinfo/" + strconv.Itoa(fd))
	if err != nil {
		return 0, err
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "mnt_id:"); ok {
			return strconv.ParseUint(strings.TrimSpace(v), 10, 64)
		}
	}
	return 0, errors.New("no mnt_id in fdinfo")
}

// openNoFollow opens p (absolute, not /, without "..") following no symlink, and
// returns O_PATH descriptors of it and of the directory it was opened from. Where the
// kernel has openat2 (Linux 5.6) that is two calls, the parent's path and then its
// last component, each resolved with RESOLVE_NO_SYMLINKS; elsewhere (or where the
// syscall filter refuses it) it walks p one component at a time (openNoFollowWalk).
func openNoFollow(p string) (fd, parent int, err error) {
	var comps []string
	for _, c := range strings.Split(strings.Trim(p, "/"), "/") {
		switch c {
		case "":
			continue
		case "..":
			return -1, -1, unix.EINVAL
		}
		comps = append(comps, c)
	}
	if len(comps) == 0 {
		return -1, -1, unix.EINVAL // "/" itself
	}
	fd, parent, err = openNoFollow2(comps)
	if errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EPERM) {
		return openNoFollowWalk(comps)
	}
	return fd, parent, err
}

// openNoFollow2 is openNoFollow by openat2: a symlink anywhere on the way, the last
// component included (no O_NOFOLLOW), fails with ELOOP.
func openNoFollow2(comps []string) (fd, parent int, err error) {
	how := &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_SYMLINKS}
	dir := &unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_SYMLINKS}
	parent, err = unix.Openat2(unix.AT_FDCWD, "/"+strings.Join(comps[:len(comps)-1], "/"), dir)
	if err != nil {
		return -1, -1, err
	}
	fd, err = unix.Openat2(parent, comps[len(comps)-1], how)
	if err != nil {
		unix.Close(parent)
		return -1, -1, err
	}
	return fd, parent, nil
}

// openNoFollowWalk is openNoFollow one component at a time from /.
func openNoFollowWalk(comps []string) (fd, parent int, err error) {
	fd, err = unix.Open("/", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, -1, err
	}
	parent = -1
	for _, c := range comps {
		nfd, oerr := unix.Openat(fd, c, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if oerr != nil {
			err = oerr
			break
		}
		if parent >= 0 {
			unix.Close(parent)
		}
		parent, fd = fd, nfd
		var st unix.Stat_t
		if err = unix.Fstat(fd, &st); err != nil {
			break
		}
		if st.Mode&unix.S_IFMT == unix.S_IFLNK {
			err = fmt.Errorf("%s is a symlink", c)
			break
		}
	}
	if err != nil {
		unix.Close(fd)
		if parent >= 0 {
			unix.Close(parent)
		}
		return -1, -1, err
	}
	return fd, parent, nil
}

// verifyCheck checks c (numbers compared when same). A pinned path's (c.Ino) stat
// and file system are those of the file its identity check reached, not of a second
// lookup of the path.
func verifyCheck(c wire.Check, same bool) error {
	var st unix.Stat_t
	fd := -1
	if c.MayVanish {
		if err := unix.Lstat(c.Path, &st); errors.Is(err, unix.ENOENT) {
			return nil
		}
	}
	if c.Ino != 0 {
		var err error
		if fd, err = verifyIdentity(c, same, &st); err != nil {
			return err
		}
		defer unix.Close(fd)
	} else if err := unix.Stat(c.Path, &st); err != nil {
		return fmt.Errorf("%s %s is missing: %v", c.Kind, c.Path, err)
	}
	kind := st.Mode & unix.S_IFMT
	switch c.Kind {
	case wire.CheckMaskFile:
		if kind != unix.S_IFREG || st.Size != 0 {
			return fmt.Errorf("mask %s is not an empty file", c.Path)
		}
	case wire.CheckMaskDir:
		if kind != unix.S_IFDIR {
			return fmt.Errorf("mask %s is not a directory", c.Path)
		}
		extra, err := unexpectedEntries(c.Path, c.Allow)
		if errors.Is(err, os.ErrPermission) {
			// runc gives a tmpfs the mode of the directory it covers: the mask of a
			// directory its owner cannot list (0300) cannot be listed either.
			err = emptyUnlisted(c.Path, c.Allow)
		}
		if err != nil || len(extra) > 0 {
			return fmt.Errorf("mask %s is not an empty directory (it holds %q, %v)", c.Path, extra, err)
		}
	case wire.CheckData:
		if kind != unix.S_IFREG || st.Size != c.Size {
			return fmt.Errorf("%s is not a file of %d bytes", c.Path, c.Size)
		}
	case wire.CheckSealed:
		return verifySealed(c.Path, os.Getuid())
	case wire.CheckRO, wire.CheckRW:
	default:
		return fmt.Errorf("unknown check %q for %s", c.Kind, c.Path)
	}
	if c.Kind == wire.CheckRW {
		return nil
	}
	var fs unix.Statfs_t
	var err error
	if fd >= 0 {
		err = unix.Fstatfs(fd, &fs)
	} else {
		err = unix.Statfs(c.Path, &fs)
	}
	if err != nil {
		return fmt.Errorf("%s %s: %v", c.Kind, c.Path, err)
	}
	if fs.Flags&unix.ST_RDONLY == 0 {
		return fmt.Errorf("%s is %w (%s)", c.Path, errWritable, c.Kind)
	}
	return nil
}

// verifySealed checks that path and every directory above it belong to another user
// than uid and are writable by their owner only (wire.CheckSealed).
func verifySealed(path string, uid int) error {
	for p := path; ; p = filepath.Dir(p) {
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			return fmt.Errorf("sealed %s: %v", path, err)
		}
		if int(st.Uid) == uid || st.Mode&0o022 != 0 || st.Mode&unix.S_IFMT == unix.S_IFLNK {
			return fmt.Errorf("%s is %w: %s is owned by uid %d with mode %o", path, errUnsealed, p, st.Uid, st.Mode&0o7777)
		}
		if p == "/" {
			return nil
		}
	}
}

// errUnsealed is a sealed check's failure.
var errUnsealed = errors.New("changeable by the sandbox but must be sealed")

// errWritable is a read-only check's failure by statfs.
var errWritable = errors.New("writable but must be read-only")

// readOnlyByProbe tells a read-only mount that statfs cannot see: changing path's mode
// to its own mode must be refused as read-only (EROFS), or, for a path that is not
// the caller's and that nobody else may write, as not permitted.
func readOnlyByProbe(path string) bool {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return false
	}
	err := unix.Fchmodat(unix.AT_FDCWD, path, st.Mode&0o7777, 0)
	switch {
	case errors.Is(err, unix.EROFS):
		return true
	case errors.Is(err, unix.EPERM):
		return int(st.Uid) != os.Getuid() && st.Mode&0o022 == 0
	}
	return false
}

// emptyUnlisted checks, without listing it, that dir is an empty directory but for
// the names in allow: the root of a tmpfs of its own whose inodes in use are its root
// and those of allow's names that are there. A tmpfs that does not count its inodes
// (nr_inodes=0), or a name of allow that cannot be looked up (no search permission),
// fails: nothing is proven.
func emptyUnlisted(dir string, allow []string) error {
	fd, parent, err := openNoFollow(dir)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	defer unix.Close(parent)
	m, err1 := mountID(fd)
	pm, err2 := mountID(parent)
	if err := errors.Join(err1, err2); err != nil {
		return err
	}
	var sfs unix.Statfs_t
	if err := unix.Fstatfs(fd, &sfs); err != nil {
		return err
	}
	if m == pm || sfs.Type != unix.TMPFS_MAGIC || sfs.Files == 0 {
		return errors.New("it cannot be listed, and it is not a tmpfs of its own whose inodes can be counted")
	}
	used := uint64(1) // the root
	for _, n := range allow {
		var st unix.Stat_t
		switch err := unix.Fstatat(fd, n, &st, unix.AT_SYMLINK_NOFOLLOW); {
		case err == nil:
			used++
		case !errors.Is(err, unix.ENOENT):
			return fmt.Errorf("looking up %s in it: %w", n, err)
		}
	}
	if n := sfs.Files - sfs.Ffree; n != used {
		return fmt.Errorf("it cannot be listed, and its file system holds %d inodes, not %d", n, used)
	}
	return nil
}

// unexpectedEntries lists the entries of dir not named in allow.
func unexpectedEntries(dir string, allow []string) ([]string, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if errors.Is(err, io.EOF) {
		err = nil
	}
	var extra []string
	for _, n := range names {
		if !slices.Contains(allow, n) {
			extra = append(extra, n)
		}
	}
	return extra, err
}

// verifyPrivileges checks that the init holds no capability and cannot gain one;
// with containerRoot (wire.Manifest.ContainerRoot), also that its uid 0 is not the
// host's.
func verifyPrivileges(containerRoot bool) error {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return fmt.Errorf("reading /proc/self/status: %v", err)
	}
	var capEff, capBnd, nnp string
	for _, l := range strings.Split(string(b), "\n") {
		k, v, _ := strings.Cut(l, ":")
		switch k {
		case "CapEff":
			capEff = strings.TrimSpace(v)
		case "CapBnd":
			capBnd = strings.TrimSpace(v)
		case "NoNewPrivs":
			nnp = strings.TrimSpace(v)
		}
	}
	if n, err := strconv.ParseUint(capEff, 16, 64); err != nil || n != 0 {
		return fmt.Errorf("the sandbox holds capabilities (CapEff %s); the container must drop them all", capEff)
	}
	if nnp != "1" {
		return errors.New("no_new_privs is not set; the container must run with no-new-privileges")
	}
	if os.Geteuid() != 0 && os.Getuid() != 0 {
		return nil
	}
	// The container's root (a rootless engine's, the user): a program it runs gains
	// the bounding set, whatever no_new_privs says; and it must not be the host's root.
	if n, err := strconv.ParseUint(capBnd, 16, 64); err != nil || n != 0 {
		return fmt.Errorf("the sandbox runs as uid 0 with a bounding set of capabilities (CapBnd %s) that a program it runs would gain; the container must drop them all", capBnd)
	}
	if !containerRoot {
		return nil
	}
	m, err := os.ReadFile("/proc/self/uid_map")
	if err != nil {
		return fmt.Errorf("reading /proc/self/uid_map: %v", err)
	}
	if hostRoot(string(m)) {
		return errors.New("the sandbox would run as uid 0 of the host's user namespace (the host's root): the engine is not a rootless one; run it as your user (rootless Docker) or reach a rootful engine through its own socket (root's), where devsandbox runs the command as your uid")
	}
	return nil
}

// hostRoot reports whether uidMap (a /proc/PID/uid_map) maps uid 0 to the host's uid
// 0: the initial user namespace, or one whose root is the host's.
func hostRoot(uidMap string) bool {
	for _, l := range strings.Split(uidMap, "\n") {
		f := strings.Fields(l)
		if len(f) != 3 {
			continue
		}
		in, err1 := strconv.ParseUint(f[0], 10, 32)
		out, err2 := strconv.ParseUint(f[1], 10, 32)
		n, err3 := strconv.ParseUint(f[2], 10, 32)
		if err1 != nil || err2 != nil || err3 != nil {
			return true // unreadable: not proven otherwise
		}
		if in == 0 && n > 0 {
			return out == 0
		}
	}
	return true // uid 0 unmapped here cannot be: it is what we run as
}

// readOnlyForOthers checks that dir (the secret directory) admits nobody else.
func readOnlyForOthers(dir string) error {
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		return fmt.Errorf("secret directory %s: %v", dir, err)
	}
	if st.Mode&0o077 != 0 || int(st.Uid) != os.Getuid() {
		return fmt.Errorf("secret directory %s is open to others (mode %o, uid %d)", dir, st.Mode&0o7777, st.Uid)
	}
	return nil
}

// verifyNoNetwork checks that only the loopback interface exists.
func verifyNoNetwork() error {
	ents, err := os.ReadDir("/sys/class/net")
	if err != nil {
		b, perr := os.ReadFile("/proc/net/dev")
		if perr != nil {
			return fmt.Errorf("cannot list network interfaces: %v", err)
		}
		for _, l := range strings.Split(string(b), "\n")[2:] {
			name, _, ok := strings.Cut(strings.TrimSpace(l), ":")
			if ok && name != "lo" {
				return fmt.Errorf("egress none, but the interface %s exists", name)
			}
		}
		return nil
	}
	for _, e := range ents {
		if e.Name() != "lo" {
			return fmt.Errorf("egress none, but the interface %s exists", e.Name())
		}
	}
	return nil
}
