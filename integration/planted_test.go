//go:build integration

package integration

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// linkTarget is a host directory of the user's holding one file: what the links a
// test plants where devsandbox removes things point at, so the test can tell that
// nothing followed them.
type linkTarget struct {
	t   *testing.T
	dir string
}

// newLinkTarget makes p's victim/precious.
func newLinkTarget(t *testing.T, p *project) *linkTarget {
	t.Helper()
	p.write("victim/precious", "precious")
	return &linkTarget{t: t, dir: p.path("victim")}
}

// plant makes at a link to the target, owned by uid.
func (l *linkTarget) plant(at string, uid int) {
	l.t.Helper()
	if err := os.Symlink(l.dir, at); err != nil {
		l.t.Fatal(err)
	}
	if err := os.Lchown(at, uid, uid); err != nil {
		l.t.Fatal(err)
	}
}

// intact reports, as an error of the test, a target that lost its file.
func (l *linkTarget) intact(when string) {
	l.t.Helper()
	if b, err := os.ReadFile(filepath.Join(l.dir, "precious")); err != nil || string(b) != "precious" {
		l.t.Errorf("%s: the planted link's target lost its file: %q, %v", when, b, err)
	}
}

// lexists reports whether something (a link included) is at p.
func lexists(p string) bool { _, err := os.Lstat(p); return err == nil }

// holdShared takes directory d's lock as a session does (shared, for its life) and
// returns its release.
func holdShared(t *testing.T, d string) func() {
	t.Helper()
	f, err := os.Open(d)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH); err != nil {
		t.Fatal(err)
	}
	return func() { f.Close() }
}
