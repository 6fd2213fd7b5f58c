package krun

import (
	"bufio"
	"slices"
	"strings"
	"testing"

	"github.com/devsandbox/devsandbox/isolator"
)

// The stage-anchors role's request: one JSON line of anchors, each an absolute path
// pinned (an inode) with an absolute mount point; anything else is refused before a
// mount is made.
func TestReadAnchors(t *testing.T) {
	as, err := readAnchors(bufio.NewReader(strings.NewReader(`[{"path":"/p/.git","id":{"Dev":2049,"Ino":7},"stage":"/run/user/1/devsandbox/anchors-1/0"}]` + "\n" + "rest")))
	if err != nil || len(as) != 1 || as[0] != (Anchor{Path: "/p/.git", ID: isolator.FileID{Dev: 2049, Ino: 7}, Stage: "/run/user/1/devsandbox/anchors-1/0"}) {
		t.Fatalf("readAnchors = %+v, %v", as, err)
	}
	for name, in := range map[string]string{
		"empty":          "",
		"not JSON":       "ok\n",
		"relative path":  `[{"path":"p","id":{"Dev":1,"Ino":7},"stage":"/s/0"}]` + "\n",
		"relative stage": `[{"path":"/p","id":{"Dev":1,"Ino":7},"stage":"s/0"}]` + "\n",
		"not pinned":     `[{"path":"/p","stage":"/s/0"}]` + "\n",
	} {
		if as, err := readAnchors(bufio.NewReader(strings.NewReader(in))); err == nil {
			t.Errorf("%s: readAnchors = %+v, want an error", name, as)
		}
	}
}

// A path that leads to another file than the one pinned (device or inode) stops the
// staging, naming both.
func TestSamePinned(t *testing.T) {
	a := Anchor{Path: "/p/.git/config", ID: isolator.FileID{Dev: 2049, Ino: 7}}
	if err := samePinned(a, 2049, 7); err != nil {
		t.Errorf("the file pinned: %v", err)
	}
	for _, di := range [][2]uint64{{2049, 8}, {2050, 7}} {
		err := samePinned(a, di[0], di[1])
		if err == nil || !strings.Contains(err.Error(), "/p/.git/config is no longer the file devsandbox checked") {
			t.Errorf("device %d inode %d: %v, want a refusal naming the path", di[0], di[1], err)
		}
	}
}

// Each anchor's mount point is its index below the run's directory, and podman binds
// it by the anchor's path.
func TestStagePaths(t *testing.T) {
	as := []Anchor{{Path: "/p/.git"}, {Path: "/p/.git/config"}}
	got := stagePaths("/run/user/1/devsandbox/anchors-9", as)
	want := map[string]string{"/p/.git": "/run/user/1/devsandbox/anchors-9/0", "/p/.git/config": "/run/user/1/devsandbox/anchors-9/1"}
	if len(got) != len(want) || got["/p/.git"] != want["/p/.git"] || got["/p/.git/config"] != want["/p/.git/config"] {
		t.Errorf("stagePaths = %v, want %v", got, want)
	}
	if stages := []string{as[0].Stage, as[1].Stage}; !slices.Equal(stages, []string{want["/p/.git"], want["/p/.git/config"]}) {
		t.Errorf("the anchors' Stage = %q", stages)
	}
}
