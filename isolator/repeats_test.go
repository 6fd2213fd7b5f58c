package isolator_test

import (
	"testing"

	"github.com/devsandbox/devsandbox/isolator"
)

// TestMountRepeats: a mount repeats the one before it only when it is the same mount
// at the same place given the home.
func TestMountRepeats(t *testing.T) {
	mask := isolator.Mount{Kind: isolator.MaskDir, HomeRel: ".ssh", Why: "sandbox.hide_paths"}
	atHost := isolator.Mount{Kind: isolator.MaskDir, Dest: "/home/u/.ssh", Why: "sandbox.hide_paths (at its host path)"}
	id := func(ino uint64) *isolator.FileID { return &isolator.FileID{Dev: 1, Ino: ino} }
	bind := isolator.Mount{Kind: isolator.Bind, Source: "/home/u/.gitconfig", HomeRel: ".gitconfig", ReadOnly: true, ID: id(7)}
	bindAtHost := bind
	bindAtHost.HomeRel, bindAtHost.Dest, bindAtHost.ID = "", "/home/u/.gitconfig", id(7)
	for _, tc := range []struct {
		name    string
		prev, m isolator.Mount
		home    string
		want    bool
	}{
		{"at the same place", mask, atHost, "/home/u", true},
		{"in a home elsewhere", mask, atHost, "/home/sandbox", false},
		{"another kind", mask, isolator.Mount{Kind: isolator.MaskFile, Dest: "/home/u/.ssh"}, "/home/u", false},
		{"a bind of the same file", bind, bindAtHost, "/home/u", true},
		{"writable", bind, func() isolator.Mount { m := bindAtHost; m.ReadOnly = false; return m }(), "/home/u", false},
		{"another file pinned", bind, func() isolator.Mount { m := bindAtHost; m.ID = id(8); return m }(), "/home/u", false},
		{"unpinned", bind, func() isolator.Mount { m := bindAtHost; m.ID = nil; return m }(), "/home/u", false},
		{"other content", isolator.Mount{Kind: isolator.Data, Dest: "/etc/x", Content: []byte("a")}, isolator.Mount{Kind: isolator.Data, Dest: "/etc/x", Content: []byte("b")}, "/home/u", false},
	} {
		if got := tc.m.Repeats(tc.prev, tc.home); got != tc.want {
			t.Errorf("%s: Repeats = %v, want %v", tc.name, got, tc.want)
		}
	}
}
