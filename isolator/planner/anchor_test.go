package planner

import (
	"errors"
	"strings"
	"testing"

	"github.com/devsandbox/devsandbox/config"
	"github.com/devsandbox/devsandbox/isolator"
)

func TestAnchorChain(t *testing.T) {
	for _, tc := range []struct {
		root, p string
		want    []string
	}{
		{"/s", "/s/key", nil},
		{"/s", "/s/a/key", []string{"/s/a"}},
		{"/s", "/s/a/b/key", []string{"/s/a", "/s/a/b"}},
		{"/", "/a/key", []string{"/a"}},
		{"/s", "/t/key", nil},
	} {
		equalLines(t, tc.root+" "+tc.p, anchorChain(tc.root, tc.p), tc.want)
	}
}

// TestBuildAnchors: every directory between a writable bind and a mask in it is bound
// onto itself right after that bind (outermost first, once), before any mount placed
// in it, so neither the masks nor a user's mount inside are covered; a mask seen
// through a read-only bind gets none.
func TestBuildAnchors(t *testing.T) {
	f := newFixture(t)
	writeFile(t, f.root+"/rw/a/secret/key", "K\n")
	writeFile(t, f.root+"/rw/a/other/key", "K\n")
	writeFile(t, f.root+"/ro/a/key", "K\n")
	mkdirs(t, f.root+"/data", f.root+"/rw/a/mnt")
	writeFile(t, f.proj+"/conf/secret/key", "K\n")
	writeFile(t, f.proj+"/conf/.env", "A=1\n")
	cfg := f.load(t)
	cfg.Sandbox.RWBinds = []string{f.root + "/rw"}
	cfg.Sandbox.ROBinds = []string{f.root + "/ro"}
	cfg.Sandbox.HostMounts = []config.Mount{{Source: f.root + "/data", Dest: f.root + "/rw/a/mnt"}}
	cfg.Sandbox.HidePaths = []string{f.root + "/rw/a/secret/key", f.root + "/rw/a/other", f.root + "/ro/a/key", f.proj + "/conf/secret/key"}
	p, _ := f.build(t, cfg)
	equalLines(t, "mounts", mountLines(p.Mounts), f.expand(p, append(baseMounts,
		"bind rw $PROJ -> $PROJ (project)",
		"bind rw $PROJ/conf -> $PROJ/conf (holds a masked or protected path)",
		"bind rw $PROJ/conf/secret -> $PROJ/conf/secret (holds a masked or protected path)",
		"bind ro $ROOT/ro -> $ROOT/ro (sandbox.ro_binds)",
		"bind rw $ROOT/rw -> $ROOT/rw (sandbox.rw_binds)",
		"bind rw $ROOT/rw/a -> $ROOT/rw/a (holds a masked or protected path)",
		"bind rw $ROOT/rw/a/secret -> $ROOT/rw/a/secret (holds a masked or protected path)",
		"bind rw $ROOT/data -> $ROOT/rw/a/mnt (sandbox.host_mounts)",
		"maskfile $ROOT/rw/a/secret/key (sandbox.hide_paths)",
		"maskdir $ROOT/rw/a/other (sandbox.hide_paths)",
		"maskfile $ROOT/ro/a/key (sandbox.hide_paths)",
		"maskfile ~/src/app/conf/secret/key (sandbox.hide_paths)", // the project is under the home here
		"maskfile $PROJ/conf/secret/key (sandbox.hide_paths (at its host path))",
		"maskfile $PROJ/conf/.env (sandbox.mask_files)",
	)...))
}

// TestBuildHideLink: a symlink on the way to a hidden path inside a writable bind
// (what a rename with a dangling link at the old name leaves) stops the run, naming
// the link and the key, whether the path is found through it or not.
func TestBuildHideLink(t *testing.T) {
	for name, target := range map[string]string{"dangling": "gone", "to the moved dir": "moved"} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			writeFile(t, f.root+"/rw/moved/key", "K\n")
			symlink(t, target, f.root+"/rw/secret")
			cfg := f.load(t)
			cfg.Sandbox.RWBinds = []string{f.root + "/rw"}
			cfg.Sandbox.HidePaths = []string{f.root + "/rw/secret/key"}
			_, _, err := f.tryBuild(cfg)
			if !errors.Is(err, isolator.ErrProtection) || !strings.Contains(err.Error(), f.root+"/rw/secret is a symlink") || !strings.Contains(err.Error(), "sandbox.hide_paths") {
				t.Fatalf("Build: %v; want ErrProtection naming the link and the key", err)
			}
		})
	}
}

// TestBuildAnchorsSwappable: every bind whose source lies where a sandbox can write
// is an anchor (mounted from what a backend pinned, never by path): the writable_dirs
// entries of a read-only project, with or without a mask in them, the git dir bound
// writable in it, the read-only hooks and config; not the project itself.
func TestBuildAnchorsSwappable(t *testing.T) {
	f := newFixture(t)
	writeFile(t, f.proj+"/w/.env", "A=1\n")
	writeFile(t, f.proj+"/n/x/.env", "A=1\n")
	writeFile(t, f.proj+"/plain/f", "F\n")
	writeFile(t, f.proj+"/.git/config", "[core]\n")
	mkdirs(t, f.proj+"/.git/hooks")
	cfg := f.load(t)
	cfg.Sandbox.ReadOnly = true
	cfg.Sandbox.WritableDirs = []string{"w", "n", "plain"}
	p, _ := f.build(t, cfg)
	var got []string
	for _, m := range p.Mounts {
		if m.Kind == isolator.Bind && m.Anchor {
			got = append(got, m.Source+" ("+m.Why+")")
		}
	}
	equalLines(t, "anchors", got, f.expand(p,
		"$PROJ/w (sandbox.writable_dirs)",
		"$PROJ/n (sandbox.writable_dirs)",
		"$PROJ/n/x (holds a masked or protected path)",
		"$PROJ/plain (sandbox.writable_dirs)",
		"$PROJ/.git (git dir)",
		"$PROJ/.git/hooks (git hooks)",
		"$PROJ/.git/config (git config)",
	))
}
