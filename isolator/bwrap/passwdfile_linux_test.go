package bwrap

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/devsandbox/devsandbox/isolator"
)

// TestPasswdFilesBounded: WrapArgv's passwd copies, one per distinct content (a
// harness giving every session a HOME of its own), stayed in the project's state
// until it was removed. A new copy removes those no PrepareHost wrote or found for
// copyMaxAge; one found again is kept as new, and names devsandbox did not give are
// left alone (a link among them is removed, not followed).
func TestPasswdFilesBounded(t *testing.T) {
	state := t.TempDir()
	now := time.Now()
	plan := func(home string) *isolator.Plan {
		return &isolator.Plan{StateDir: state, System: isolator.SystemView{Passwd: []byte("u:x:1000:1000::" + home + ":/bin/sh\n")}}
	}
	path := func(p *isolator.Plan) string {
		f, err := PasswdFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	age := func(f string, d time.Duration) {
		if err := os.Chtimes(f, now.Add(-d), now.Add(-d)); err != nil {
			t.Fatal(err)
		}
	}
	write := func(p *isolator.Plan, at time.Time) {
		if err := writePasswdFile(p, at); err != nil {
			t.Fatal(err)
		}
	}
	old, reused, recent := plan("/h/old"), plan("/h/reused"), plan("/h/recent")
	for _, p := range []*isolator.Plan{old, reused, recent} {
		write(p, now)
	}
	dir := filepath.Dir(path(old))
	target := filepath.Join(t.TempDir(), "target")
	if err := os.WriteFile(target, []byte("kept\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "0123456789abcdef0123456789abcdef")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	foreign := filepath.Join(dir, "notes")
	if err := os.WriteFile(foreign, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	leftover := filepath.Join(dir, ".tmp-123")
	if err := os.WriteFile(leftover, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{path(old), path(reused), foreign, leftover} {
		age(f, copyMaxAge+time.Hour)
	}
	age(path(recent), copyMaxAge-time.Hour)
	// Found again: kept as new, and nothing is pruned (no copy was written).
	write(reused, now)
	if _, err := os.Lstat(path(old)); err != nil {
		t.Fatalf("a copy found again pruned the others: %v", err)
	}
	if err := unixLchtimes(link, now.Add(-copyMaxAge-time.Hour)); err != nil {
		t.Fatal(err)
	}
	write(plan("/h/new"), now)

	var got []string
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		got = append(got, e.Name())
	}
	want := []string{filepath.Base(path(reused)), filepath.Base(path(recent)), filepath.Base(path(plan("/h/new"))), "notes"}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("after a new copy, the state's passwd directory holds\n%q\nwant\n%q", got, want)
	}
	if b, err := os.ReadFile(target); err != nil || string(b) != "kept\n" {
		t.Errorf("pruning followed a link: %q %v", b, err)
	}
}

// unixLchtimes sets a link's own times.
func unixLchtimes(p string, t time.Time) error {
	ts := []unix.Timespec{unix.NsecToTimespec(t.UnixNano()), unix.NsecToTimespec(t.UnixNano())}
	return unix.UtimesNanoAt(unix.AT_FDCWD, p, ts, unix.AT_SYMLINK_NOFOLLOW)
}
