// Package sockdir is the project's private directory for its sessions' Unix sockets:
// the session proxy's, the ssh agent relay's and the published ports'. Choose picks it
// (reading the host, writing nothing: planner.Build calls it, --dry-run included);
// Ensure makes it before a run binds anything there; Sweep removes what killed
// sessions left in it.
package sockdir

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/devsandbox/devsandbox/internal/rmtree"
	"github.com/devsandbox/devsandbox/isolator"
)

// longestSocketName is the longest path a session adds below the socket directory.
const longestSocketName = len("/publish-0123456789ab/65535.sock")

// recordName is the file in the project's state directory that names the socket
// directory made in the shared temporary directory, so every session finds it.
const recordName = "sock-dir"

// ProxySocket is where session's proxy listens in the socket directory dir.
func ProxySocket(dir, session string) string { return filepath.Join(dir, "proxy-"+session+".sock") }

// AgentSocket is where session's ssh agent relay listens in the socket directory dir:
// in its agent directory (AgentDir), which a kept container binds whole.
func AgentSocket(dir, session string) string { return filepath.Join(AgentDir(dir), session+".sock") }

// AgentDir is the ssh agent relays' directory in the socket directory dir.
func AgentDir(dir string) string { return filepath.Join(dir, "agent") }

// KeptAgentDir is the directory of the relays of the sessions of the project's kept
// docker container in the socket directory dir: the engine binds it read-only, and
// it holds nothing but those sockets.
func KeptAgentDir(dir string) string { return filepath.Join(AgentDir(dir), "kept") }

// KeptAgentSocket is where session's ssh agent relay listens in dir for a kept
// docker container (KeptAgentDir).
func KeptAgentSocket(dir, session string) string {
	return filepath.Join(KeptAgentDir(dir), session+".sock")
}

// EnsureAgentDir makes the agent directory in dir, the socket directory Ensure
// returned, and with kept its KeptAgentDir (mode 0700, checked as Ensure checks what
// it makes).
func EnsureAgentDir(dir string, uid int, kept bool) error {
	if kept {
		return ensurePrivate(dir, []string{"agent", "kept"}, uid)
	}
	return ensurePrivate(dir, []string{"agent"}, uid)
}

// PublishDir is session's directory of published-port sockets in dir.
func PublishDir(dir, session string) string { return filepath.Join(dir, "publish-"+session) }

// Host are the host facts the choice depends on.
type Host struct {
	RuntimeDir string // $XDG_RUNTIME_DIR; "" when unset
	TempDir    string // $TMPDIR when absolute, else /tmp
	UID        int
}

// Choose returns the project's socket directory (made mode 0700 by Ensure). Unix
// socket paths are limited to 107 bytes, so it is the first of these whose longest
// socket path fits:
//
//   - $XDG_RUNTIME_DIR/devsandbox/<projectID>, when XDG_RUNTIME_DIR is a directory of
//     the user's that only the user can enter;
//   - <stateDir>/sock;
//   - a directory of a random name, devsandbox-<uid>-XXXXXXXX, in the temporary
//     directory, its path recorded in the state directory for the next sessions
//     (the recorded one while it is still a private directory of the user's there).
//     The temporary directory and every directory above it must belong to root or
//     the user, and be writable by others only when sticky: then nobody else can
//     create, rename or replace what devsandbox makes there.
//
// Every directory of the path that devsandbox does not create is checked with Lstat
// (owner, mode, not a symlink) before use; one that another user owns or can write
// is never used. The directory is per project: a kept container binds it whole as
// the project's stable proxy endpoint.
func Choose(h Host, stateDir, projectID string) (string, error) {
	if h.RuntimeDir != "" && filepath.IsAbs(h.RuntimeDir) {
		s := filepath.Join(h.RuntimeDir, "devsandbox", projectID)
		if fits(s) && checkPrivate(h.RuntimeDir, h.UID) == nil {
			return s, nil
		}
	}
	if s := filepath.Join(stateDir, "sock"); fits(s) {
		return s, nil
	}
	tmp := "/tmp"
	if filepath.IsAbs(h.TempDir) {
		tmp = h.TempDir
	}
	shared, err := filepath.EvalSymlinks(tmp)
	if err != nil {
		return "", dirError(err)
	}
	if err := checkAncestors(shared, h.UID); err != nil {
		return "", dirError(fmt.Errorf("the temporary directory %s cannot hold private sockets: %w", tmp, err))
	}
	if d, ok := recorded(stateDir, shared, h.UID); ok {
		return d, nil
	}
	d := filepath.Join(shared, tempPrefix(h.UID)+randomName())
	if !fits(d) {
		return "", dirError(fmt.Errorf("%s is too long for Unix socket paths", d))
	}
	return d, nil
}

func fits(s string) bool { return len(s)+longestSocketName < 100 }

func tempPrefix(uid int) string { return "devsandbox-" + strconv.Itoa(uid) + "-" }

// randomName is eight random characters of mkdtemp's kind.
func randomName() string {
	const chars = "abcdefghijklmnopqrstuvwxyz0123456789"
	var b [8]byte
	_, _ = rand.Read(b[:])
	for i := range b {
		b[i] = chars[int(b[i])%len(chars)]
	}
	return string(b[:])
}

// recorded returns the socket directory the state directory records, when it is
// still a private directory of uid's in shared.
func recorded(stateDir, shared string, uid int) (string, bool) {
	b, err := os.ReadFile(filepath.Join(stateDir, recordName))
	if err != nil {
		return "", false
	}
	d := strings.TrimSpace(string(b))
	ok := filepath.Dir(d) == shared && strings.HasPrefix(filepath.Base(d), tempPrefix(uid)) && checkPrivate(d, uid) == nil
	return d, ok
}

// Ensure makes dir, the socket directory Choose returned for stateDir and projectID,
// mode 0700, checking every directory of it devsandbox did not create (see Choose),
// and returns the directory the session uses: dir, but for one in the temporary
// directory, which is recorded in stateDir, the first recorded. Sessions started at
// once each choose a directory there; the first to record its own wins, and the
// others use that one and remove theirs.
func Ensure(dir, stateDir, projectID string, uid int) (string, error) {
	switch base, name := filepath.Dir(dir), filepath.Base(dir); {
	case dir == filepath.Join(stateDir, "sock"):
		if err := os.MkdirAll(stateDir, 0o700); err != nil {
			return "", dirError(err)
		}
		return dir, ensurePrivate(stateDir, []string{"sock"}, uid)
	case name == projectID && filepath.Base(base) == "devsandbox":
		runtime := filepath.Dir(base)
		if err := checkPrivate(runtime, uid); err != nil {
			return "", dirError(err)
		}
		return dir, ensurePrivate(runtime, []string{"devsandbox", projectID}, uid)
	case strings.HasPrefix(name, tempPrefix(uid)):
		return ensureTemp(dir, stateDir, uid)
	}
	return "", dirError(fmt.Errorf("%s is not a socket directory devsandbox chooses", dir))
}

// ensureTemp makes dir in the shared temporary directory (or checks the one there)
// and records it in stateDir, unless stateDir records another usable one, which it
// returns instead (dir, made now, is removed).
func ensureTemp(dir, stateDir string, uid int) (string, error) {
	shared := filepath.Dir(dir)
	if err := checkAncestors(shared, uid); err != nil {
		return "", dirError(fmt.Errorf("the temporary directory %s cannot hold private sockets: %w", shared, err))
	}
	if d, ok := recorded(stateDir, shared, uid); ok {
		// dir itself (the usual case), or one a concurrent session recorded after
		// Choose read the record.
		return d, nil
	}
	made := true
	if err := os.Mkdir(dir, 0o700); errors.Is(err, fs.ErrExist) {
		made = false
	} else if err != nil {
		return "", dirError(err)
	}
	// Made now or by an earlier session: either way it must be a private directory of
	// ours (one another user made first is never used).
	if err := checkPrivate(dir, uid); err != nil {
		return "", dirError(err)
	}
	if err := os.MkdirAll(stateDir, 0o700); err != nil {
		return "", dirError(err)
	}
	record := filepath.Join(stateDir, recordName)
	err := writeRecord(record, dir, false)
	if errors.Is(err, fs.ErrExist) {
		// Another session recorded first: its directory, while it is usable; else
		// (a record naming one gone or spoiled) ours replaces it.
		if d, ok := recorded(stateDir, shared, uid); ok {
			if made && d != dir {
				_ = os.Remove(dir) // empty: nothing was bound in it yet
			}
			return d, nil
		}
		err = writeRecord(record, dir, true)
	}
	if err != nil {
		return "", dirError(err)
	}
	return dir, nil
}

// writeRecord writes the record naming dir, atomically: only when there is none
// (link(2): fs.ErrExist when there is one), or with replace over the one there. The
// temporary file has a name of its own: sessions started at once each write theirs.
func writeRecord(record, dir string, replace bool) error {
	f, err := os.CreateTemp(filepath.Dir(record), recordName+".*.tmp") // mode 0600
	if err != nil {
		return err
	}
	_, err = f.WriteString(dir + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	switch {
	case err != nil:
	case replace:
		err = os.Rename(f.Name(), record)
	default:
		err = os.Link(f.Name(), record)
	}
	if err != nil || !replace {
		os.Remove(f.Name())
	}
	return err
}

func dirError(err error) error {
	return fmt.Errorf("%w: the session sockets' directory: %w; set XDG_RUNTIME_DIR to a directory only you can enter (mode 0700)", isolator.ErrProtection, err)
}

// ensurePrivate makes base/names[0]/names[1]/…, creating each missing directory with
// mode 0700 and checking each with Lstat: a directory, not a symlink, owned by uid; an
// existing one of uid's that others may enter is made 0700. base is trusted as it is.
func ensurePrivate(base string, names []string, uid int) error {
	dir := base
	for _, n := range names {
		dir = filepath.Join(dir, n)
		if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return dirError(err)
		}
		fi, err := os.Lstat(dir)
		if err != nil {
			return dirError(err)
		}
		if err := owned(dir, fi, uid); err != nil {
			return dirError(err)
		}
		if fi.Mode().Perm()&0o077 != 0 {
			if err := os.Chmod(dir, 0o700); err != nil {
				return dirError(err)
			}
		}
	}
	return nil
}

// owned checks that fi (dir's Lstat) is a directory, not a symlink, owned by uid.
func owned(dir string, fi fs.FileInfo, uid int) error {
	if fi.Mode()&fs.ModeSymlink != 0 || !fi.IsDir() {
		return fmt.Errorf("%s is not a directory (%v)", dir, fi.Mode().Type())
	}
	if o := owner(fi); o != uid {
		return fmt.Errorf("%s belongs to uid %d, not to you (uid %d)", dir, o, uid)
	}
	return nil
}

// checkPrivate checks that dir is a directory of uid's that nobody else can enter.
func checkPrivate(dir string, uid int) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if err := owned(dir, fi, uid); err != nil {
		return err
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return fmt.Errorf("%s has mode %v: others may enter it", dir, fi.Mode().Perm())
	}
	return nil
}

func owner(fi fs.FileInfo) int {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid)
	}
	return -1
}

// checkAncestors checks dir and every directory above it with Lstat: each belongs to
// root or uid, and one that others may write has the sticky bit (so nobody but an
// entry's owner can rename or remove it). dir has no symlink in it.
func checkAncestors(dir string, uid int) error {
	for d := dir; ; d = filepath.Dir(d) {
		fi, err := os.Lstat(d)
		if err != nil {
			return err
		}
		if fi.Mode()&fs.ModeSymlink != 0 || !fi.IsDir() {
			return fmt.Errorf("%s is not a directory", d)
		}
		if o := owner(fi); o != 0 && o != uid {
			return fmt.Errorf("%s belongs to uid %d", d, o)
		}
		if fi.Mode().Perm()&0o022 != 0 && fi.Mode()&fs.ModeSticky == 0 {
			return fmt.Errorf("%s is writable by others and not sticky (mode %v)", d, fi.Mode())
		}
		if d == filepath.Dir(d) {
			return nil
		}
	}
}

// Sweep removes what sessions that died without cleaning up (kill -9) left in the
// socket directory dir: proxy and ssh agent sockets nothing accepts on any more (a connection is
// refused), and publish directories older than a minute none of whose sockets
// accepts (a younger one may belong to a session still starting), with whatever the
// sandbox left in them. A run sweeps once, before it adds its own sockets.
func Sweep(dir string) {
	names, _ := filepath.Glob(filepath.Join(dir, "proxy-*.sock"))
	// Relays' sockets: no sandbox can write their directory (a kept container binds
	// it read-only), but only a socket is dialled all the same.
	agents, _ := filepath.Glob(filepath.Join(AgentDir(dir), "*.sock"))
	kept, _ := filepath.Glob(filepath.Join(KeptAgentDir(dir), "*.sock"))
	agents = append(agents, kept...)
	agents = slices.DeleteFunc(agents, func(n string) bool {
		fi, err := os.Lstat(n)
		return err != nil || fi.Mode().Type() != fs.ModeSocket
	})
	for _, n := range append(names, agents...) {
		if stale(n) {
			_ = os.Remove(n)
		}
	}
	pubs, _ := filepath.Glob(filepath.Join(dir, "publish-*"))
	for _, d := range pubs {
		fi, err := os.Lstat(d)
		if err != nil || !fi.IsDir() || time.Since(fi.ModTime()) < time.Minute {
			continue
		}
		// The sandbox could write the directory: only a socket itself is dialled (a
		// link it planted may name a host socket, which must not be connected to,
		// nor keep the directory), and the removal follows no link and opens up what
		// it locked (rmtree).
		if !anyLive(d) {
			_ = rmtree.RemoveAll(d)
		}
	}
}

// stale reports whether the Unix socket at path refuses connections (nobody serves it).
func stale(path string) bool {
	c, err := net.DialTimeout("unix", path, 100*time.Millisecond)
	if err == nil {
		c.Close()
		return false
	}
	return errors.Is(err, syscall.ECONNREFUSED)
}

// Listen listens on a Unix socket of mode 0600 at path that appears there already
// accepting: it is bound in a fresh directory beside path, made 0600 there, and linked
// into place (never over anything at path: that is an error). Bound at path itself it
// would sit there for a moment before it listens, refusing connections, and a
// concurrent session's Sweep would take it for a dead session's and remove it (seen
// with sixteen runs of one project at once: the proxy's chmod found no socket). The
// listener leaves the socket file when it closes; its owner removes it.
func Listen(path string) (*net.UnixListener, error) {
	dir, err := os.MkdirTemp(filepath.Dir(path), ".l") // short: socket paths are limited to 107 bytes
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	tmp := filepath.Join(dir, "s")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: tmp, Net: "unix"})
	if err != nil {
		return nil, err
	}
	ln.SetUnlinkOnClose(false)
	if err = os.Chmod(tmp, 0o600); err == nil {
		err = os.Link(tmp, path)
	}
	if err != nil {
		ln.Close()
		return nil, err
	}
	return ln, nil
}
