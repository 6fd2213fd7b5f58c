package krun

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/containers/podman/v5/pkg/specgen"
	"golang.org/x/sys/unix"

	"github.com/devsandbox/devsandbox/isolator"
)

// Container creations on one podman service take turns. For every keep-id container
// (devsandbox's are) podman's service reads the user's subordinate IDs through
// shadow's libsubid, which is not thread safe, and podman 4.3.1 calls it without a
// lock: creations at the same moment answer "keep-id requires additional UIDs or
// GIDs defined in /etc/subuid and /etc/subgid" (the service logs "cannot read
// subids"), or the service dies of a SIGSEGV in subid_get_uid_ranges, failing every
// run on it (four creations at once through its API crashed it here). Later
// containers/storage releases take a lock of their own; older services need the
// callers to take turns. The turn is an exclusive flock on a file per socket, so runs
// in other devsandbox processes wait too; it lasts the create call alone.

// createLockPath is the lock of the creations on sock: in podman's runtime directory
// (the user's own), not beside a krun.podman_socket the user runs.
func createLockPath(runtimeDir string, uid int, sock string) string {
	sum := sha256.Sum256([]byte(sock))
	return filepath.Join(podmanRuntimeDir(runtimeDir, uid), "podman", "devsandbox-create-"+hex.EncodeToString(sum[:6])+".lock")
}

// LockCreate takes the exclusive lock at path, waiting for the holder; unlock
// releases it. It gives up when ctx ends, and then holds nothing: the lock is not
// taken later (package flock).
func (osHost) LockCreate(ctx context.Context, path string) (unlock func(), err error) {
	return lockFile(ctx, path, nil)
}

// lockFile takes the exclusive lock at path; waiting (nil: none) is called once when
// it is held elsewhere, before the wait (takeLock).
func lockFile(ctx context.Context, path string, waiting func()) (func(), error) {
	f, err := takeLock(ctx, path, unix.LOCK_EX, waiting)
	if err != nil {
		return nil, err
	}
	return func() { f.Close() }, nil // closing the last descriptor drops the lock
}

// createTries is how often a run asks for its container when podman's answer is
// libsubid's failure (a client other than devsandbox creating at the same moment).
const createTries = 3

// errSubIDs is the start of podman's answer when it could not read the user's
// subordinate IDs.
const errSubIDs = "keep-id requires additional UIDs or GIDs"

// create has podman create the container, in turn with the other creations on the
// service, and again when podman could not read the user's subordinate IDs.
func (b *Isolator) create(ctx context.Context, h Host, e engine, g *specgen.SpecGenerator) (string, []string, error) {
	lock := createLockPath(b.Settings.RuntimeDir, b.Settings.UID, b.socketName())
	for i := 1; ; i++ {
		unlock, err := h.LockCreate(ctx, lock)
		if err != nil {
			if errors.Is(err, isolator.ErrProtection) {
				return "", nil, err // a link planted at the lock: it says which and what to do
			}
			if ctx.Err() != nil {
				// The run ended: not an isolator that cannot run, which mode auto
				// would run unsandboxed.
				return "", nil, fmt.Errorf("waiting for the other container creations on podman's service (%s): %w", lock, err)
			}
			return "", nil, fmt.Errorf("%w: waiting for the other container creations on podman's service (%s): %w", isolator.ErrUnavailable, lock, err)
		}
		id, warnings, err := e.Create(g)
		unlock()
		if err == nil || !strings.Contains(err.Error(), errSubIDs) {
			return id, warnings, err
		}
		if i == createTries {
			return "", nil, fmt.Errorf("%w (asked %d times: `devsandbox doctor` checks that /etc/subuid and /etc/subgid give your user a range; podman 4.x also answers this when another client creates a container on the same service at the same moment)", err, i)
		}
		select {
		case <-time.After(time.Duration(i) * 100 * time.Millisecond): // a back-off, not a wait for an event
		case <-ctx.Done():
			return "", nil, context.Cause(ctx)
		}
	}
}
