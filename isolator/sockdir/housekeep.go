package sockdir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/devsandbox/devsandbox/internal/rmtree"
)

// The socket directories made in the shared temporary directory outlive their
// project's state when nothing removes them (a throwaway home, a state directory
// removed by hand): `sandboxes rm` removes a project's own (RemoveRecorded) and
// `sandboxes prune` the orphans (PruneTemp). Every session holds its socket directory
// (Hold) with a shared flock on the directory itself for its whole life; a removal
// takes it exclusively, without waiting, and removes only what nobody holds and no
// socket in it is served (sessions of builds from before Hold take no lock). A
// session that finds its directory gone once it holds it makes it anew (Hold reports
// ErrGone).

// ErrGone is the class of Hold's error when the directory was removed (or replaced)
// before the lock was taken.
var ErrGone = errors.New("the socket directory was removed meanwhile")

// orphanAge is how old (last modified) a socket directory no state records must be to
// be an orphan: a session records the one it makes microseconds after making it.
const orphanAge = time.Minute

// Hold takes dir, the socket directory Ensure returned, for a session: a shared flock
// on the directory, held until release. It fails with ErrGone when dir is no longer
// the directory locked (a prune removed it): the caller runs Ensure again.
func Hold(dir string) (release func(), err error) {
	release, err = hold(dir)
	if err != nil && !errors.Is(err, ErrGone) {
		return nil, dirError(err)
	}
	return release, err
}

// hold is Hold with the error as it is.
func hold(dir string) (release func(), err error) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return nil, fmt.Errorf("%s: %w", dir, ErrGone)
	}
	if err != nil {
		return nil, err
	}
	if err := flock(fd, unix.LOCK_SH); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("locking %s: %w", dir, err)
	}
	var held, now unix.Stat_t
	if unix.Fstat(fd, &held) != nil || unix.Lstat(dir, &now) != nil || held.Nlink == 0 || held.Dev != now.Dev || held.Ino != now.Ino {
		unix.Close(fd)
		return nil, fmt.Errorf("%s: %w", dir, ErrGone)
	}
	return func() { unix.Close(fd) }, nil
}

// RecordedTemp returns the socket directory the project's state directory stateDir
// records, "" when it records none. What it names is checked only by the removal.
func RecordedTemp(stateDir string) string {
	b, err := os.ReadFile(filepath.Join(stateDir, recordName))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// RemoveRecorded removes dir, the socket directory a project's state recorded
// (RecordedTemp), when it is one devsandbox makes in a temporary directory for uid
// (named so, in a directory that only root or uid can change) and is still a
// directory of uid's that nobody holds. A link, another user's directory, or a
// directory of another name is left alone (an error says why); one a session holds is
// left with an error of class ErrInUse.
func RemoveRecorded(dir string, uid int) error {
	if !filepath.IsAbs(dir) || !strings.HasPrefix(filepath.Base(dir), tempPrefix(uid)) {
		return fmt.Errorf("%s is not a socket directory devsandbox makes in a temporary directory: left alone", dir)
	}
	if err := checkAncestors(filepath.Dir(dir), uid); err != nil {
		return fmt.Errorf("%s was left alone: %w", dir, err)
	}
	return removeUnheld(dir, uid, time.Time{})
}

// ErrInUse is the class of a removal refused because a session holds the directory.
var ErrInUse = errors.New("a session holds it")

// PruneTemp removes the orphan socket directories of user uid in the temporary
// directory of h (as Choose picks it): each a devsandbox-<uid>-XXXXXXXX there that no
// project state directory under stateRoot records, that is a directory of uid's (a
// link or another user's is never followed nor removed), older than a minute, and
// that nobody holds (Hold) nor serves (a socket in it that accepts: a session of a
// build from before Hold). With dryRun it removes nothing. It returns the directories
// it removed (or would).
func PruneTemp(h Host, stateRoot string, now time.Time, dryRun bool) ([]string, error) {
	tmp := "/tmp"
	if filepath.IsAbs(h.TempDir) {
		tmp = h.TempDir
	}
	shared, err := filepath.EvalSymlinks(tmp)
	if err != nil {
		return nil, err
	}
	if err := checkAncestors(shared, h.UID); err != nil {
		return nil, fmt.Errorf("the temporary directory %s is not one devsandbox makes socket directories in: %w", tmp, err)
	}
	recorded := map[string]bool{}
	states, err := os.ReadDir(stateRoot)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	for _, s := range states {
		if d := RecordedTemp(filepath.Join(stateRoot, s.Name())); d != "" {
			recorded[d] = true
		}
	}
	orphan := func(name string) bool {
		return strings.HasPrefix(name, tempPrefix(h.UID)) && !recorded[filepath.Join(shared, name)]
	}
	return pruneIn(shared, orphan, h.UID, now, dryRun)
}

// pruneIn removes the directories of uid's in parent whose names orphan accepts,
// older than orphanAge, that nobody holds nor serves (removeUnheld); a link or another
// user's entry is never followed nor removed. With dryRun it removes nothing. It
// returns the directories it removed (or would).
func pruneIn(parent string, orphan func(name string) bool, uid int, now time.Time, dryRun bool) ([]string, error) {
	entries, err := os.ReadDir(parent)
	if err != nil {
		return nil, err
	}
	var gone []string
	for _, e := range entries {
		if !e.IsDir() || !orphan(e.Name()) {
			continue // e.IsDir is the entry's own type: false for a link
		}
		d := filepath.Join(parent, e.Name())
		if dryRun {
			if unheld(d, uid, now.Add(-orphanAge)) {
				gone = append(gone, d)
			}
			continue
		}
		if removeUnheld(d, uid, now.Add(-orphanAge)) == nil {
			gone = append(gone, d)
		}
	}
	return gone, nil
}

// openOwn opens the directory d without following a link and checks that it is uid's
// and, unless before is zero, was last modified before it.
func openOwn(d string, uid int, before time.Time) (int, error) {
	fd, err := unix.Open(d, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("%s was left alone: %w", d, err)
	}
	var st unix.Stat_t
	switch {
	case unix.Fstat(fd, &st) != nil:
		err = fmt.Errorf("%s was left alone: it cannot be examined", d)
	case int(st.Uid) != uid:
		err = fmt.Errorf("%s was left alone: it belongs to uid %d, not to you (uid %d)", d, st.Uid, uid)
	case !before.IsZero() && !time.Unix(st.Mtim.Unix()).Before(before):
		err = fmt.Errorf("%s was left alone: it changed within the last minute", d)
	}
	if err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

// unheld reports whether removeUnheld would remove d.
func unheld(d string, uid int, before time.Time) bool {
	fd, err := openOwn(d, uid, before)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	return flock(fd, unix.LOCK_EX|unix.LOCK_NB) == nil && !served(d)
}

// served reports whether a socket in the socket directory d accepts a connection: a
// session serves it, though it holds no lock (a devsandbox build from before Hold).
// Sockets are dialled as Sweep dials them (anyLive: no link followed).
func served(d string) bool {
	if anyLive(d) || anyLive(AgentDir(d)) || anyLive(KeptAgentDir(d)) {
		return true
	}
	pubs, _ := filepath.Glob(filepath.Join(d, "publish-*"))
	return slices.ContainsFunc(pubs, anyLive)
}

// removeUnheld removes the directory d of uid's (see openOwn) while it holds its lock
// exclusively: a session that holds it keeps it, and one that takes it meanwhile
// finds it gone (Hold). d's parent is one only root and uid can change, or sticky: d
// cannot be replaced between the checks and the removal, which follows no link
// inside it (rmtree).
func removeUnheld(d string, uid int, before time.Time) error {
	fd, err := openOwn(d, uid, before)
	if errors.Is(err, unix.ENOENT) {
		return nil // gone already
	}
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if err := flock(fd, unix.LOCK_EX|unix.LOCK_NB); err != nil {
		if errors.Is(err, unix.EWOULDBLOCK) {
			return fmt.Errorf("%s was left alone: %w", d, ErrInUse)
		}
		return fmt.Errorf("%s was left alone: locking it: %w", d, err)
	}
	if served(d) {
		return fmt.Errorf("%s was left alone: %w (a socket in it accepts connections)", d, ErrInUse)
	}
	if err := rmtree.RemoveAll(d); err != nil {
		return fmt.Errorf("removing %s: %w", d, err)
	}
	return nil
}

// flock is flock(2) on fd, retried when a signal interrupts it.
func flock(fd, how int) error {
	for {
		err := unix.Flock(fd, how)
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}
