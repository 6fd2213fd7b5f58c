//go:build integration

package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// bindLinkFixture makes, beside the project (in the test user's home), a tools
// directory holding current -> <root>/opt/v2 (an absolute link the test user owns)
// and <root>/opt/v2/secret, and returns the tools directory, the opt directory and
// the secret's path through the link.
func bindLinkFixture(t *testing.T, p *project) (tools, opt, through string) {
	t.Helper()
	p.write("opt/v2/secret", "SECRET-BAIT\n")
	p.write("opt/v3/secret", "OTHER-BAIT\n")
	p.mkdir("tools")
	tools, opt = p.path("tools"), p.path("opt")
	link := filepath.Join(tools, "current")
	if err := os.Symlink(filepath.Join(opt, "v2"), link); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(link, it.uid, it.gid); err != nil {
		t.Fatal(err)
	}
	return tools, opt, filepath.Join(link, "secret")
}

// TestMaskThroughLinkInReadOnlyBind: a mask whose destination goes through an
// absolute link inside a read-only user bind (ro_binds of a directory you own,
// holding current -> /…/opt/v2) is placed where the link leads, and the secret is
// empty by both names. bubblewrap makes a destination below its new root following
// the links there, where an absolute one leads out of it: the launch stopped with
// bubblewrap's "Can't create file" (125). The sandbox cannot retarget the link (the
// bind is read-only and nothing it can write holds it), so following it is safe.
func TestMaskThroughLinkInReadOnlyBind(t *testing.T) {
	forEachIsolator(t, func(t *testing.T, iso string) {
		p := newProject(t)
		tools, opt, through := bindLinkFixture(t, p)
		cfg := p.writeConfig(iso, "bindlink.toml", "[sandbox]\nro_binds = [\""+tools+"\", \""+opt+"\"]\nhide_paths = [\""+through+"\"]\n")
		r := run(t, p.dir, nil, "", "--isolator="+iso, "--config", cfg, "--egress=none", "--", "/bin/sh", "-c",
			`for f in `+through+` `+opt+`/v2/secret; do if [ -f "$f" ] && [ ! -s "$f" ]; then echo "$f: empty"; else echo "$f: NOT MASKED"; cat "$f"; fi; done; cat `+opt+`/v3/secret`)
		want := through + ": empty\n" + opt + "/v2/secret: empty\nOTHER-BAIT\n"
		if r.code != 0 || r.stdout != want {
			t.Fatalf("a mask through a link in a read-only bind: want exit 0 and\n%s\ngot:\n%s", want, r)
		}
	})
}

// TestMaskThroughRetargetedLink is the attack on following links in binds: the link
// lies where the sandbox can write (a read-only bind of a directory inside the
// project, or a read-write bind), a first run retargets it (current -> v3), and the
// next run's mask would land at v3/secret and leave v2's secret, the one the user
// meant to hide, readable where the sandbox can reach it. The next run must stop
// (125) naming the link, not follow it.
func TestMaskThroughRetargetedLink(t *testing.T) {
	forEachIsolator(t, func(t *testing.T, iso string) {
		for _, tc := range []struct{ name, key string }{{"ro bind inside the project", "ro_binds"}, {"rw bind", "rw_binds"}} {
			t.Run(tc.name, func(t *testing.T) {
				p := newProject(t)
				_, opt, _ := bindLinkFixture(t, p)
				tools := filepath.Join(p.dir, "vendor", "tools")
				if tc.key == "rw_binds" {
					tools = p.path("rwtools")
				}
				p.mkdir(strings.TrimPrefix(tools, p.root+"/"))
				link := filepath.Join(tools, "current")
				if err := os.Symlink(filepath.Join(opt, "v2"), link); err != nil {
					t.Fatal(err)
				}
				if err := os.Lchown(link, it.uid, it.gid); err != nil {
					t.Fatal(err)
				}
				// The first run plants: no mask through the link yet.
				cfg := p.writeConfig(iso, "plant.toml", "[sandbox]\n"+tc.key+" = [\""+tools+"\", \""+opt+"\"]\n")
				if tc.key == "ro_binds" {
					cfg = p.writeConfig(iso, "plant.toml", "[sandbox]\nro_binds = [\""+opt+"\"]\n")
				}
				r := run(t, p.dir, nil, "", "--isolator="+iso, "--config", cfg, "--egress=none", "--", "/bin/sh", "-c",
					"ln -sfn "+opt+"/v3 "+link+".new && mv -T "+link+".new "+link+" && readlink "+link)
				if r.code != 0 || r.stdout != opt+"/v3\n" {
					t.Fatalf("retargeting %s from the sandbox: want exit 0 and %s/v3, got:\n%s", link, opt, r)
				}
				through := filepath.Join(link, "secret")
				cfg = p.writeConfig(iso, "mask.toml", "[sandbox]\n"+tc.key+" = [\""+tools+"\", \""+opt+"\"]\nhide_paths = [\""+through+"\"]\n")
				r = run(t, p.dir, nil, "", "--isolator="+iso, "--config", cfg, "--egress=none", "--", "/bin/sh", "-c",
					"cat "+opt+"/v2/secret "+opt+"/v3/secret; echo ran")
				if r.code != 125 || strings.Contains(r.stdout, "ran") || !strings.Contains(r.stderr, link) {
					t.Fatalf("a mask through %s, which the sandbox retargeted: want exit 125 naming the link, got:\n%s", link, r)
				}
			})
		}
	})
}

// TestMaskThroughLinkInSharedDir is the attack by another host user on following
// links in binds: the link is the user's, but the directory holding it is
// group-writable, so another member of the group can swap the link between
// devsandbox's check and the mount, and the mask lands where that user chose while
// v2's secret stays readable. The run must stop (125) naming the directory and the
// fix. A sticky world-writable directory (only the link's owner can replace it)
// holding the user's link is followed, as a private one is. Before, the link was
// followed whoever could write the directory holding it.
func TestMaskThroughLinkInSharedDir(t *testing.T) {
	forEachIsolator(t, func(t *testing.T, iso string) {
		for _, tc := range []struct {
			name string
			mode os.FileMode
			ok   bool
		}{{"group-writable", 0o775, false}, {"sticky world-writable", 0o777 | os.ModeSticky, true}} {
			t.Run(tc.name, func(t *testing.T) {
				p := newProject(t)
				tools, opt, through := bindLinkFixture(t, p)
				if err := os.Chmod(tools, tc.mode); err != nil {
					t.Fatal(err)
				}
				cfg := p.writeConfig(iso, "bindlink.toml", "[sandbox]\nro_binds = [\""+tools+"\", \""+opt+"\"]\nhide_paths = [\""+through+"\"]\n")
				r := run(t, p.dir, nil, "", "--isolator="+iso, "--config", cfg, "--egress=none", "--", "/bin/sh", "-c",
					"cat "+opt+"/v2/secret; echo ran")
				switch {
				case tc.ok && (r.code != 0 || r.stdout != "ran\n"):
					t.Fatalf("a mask through the user's link in a sticky directory: want exit 0 and the secret empty, got:\n%s", r)
				case !tc.ok && (r.code != 125 || strings.Contains(r.stdout, "ran") || !strings.Contains(r.stderr, tools+", which holds the link") || !strings.Contains(r.stderr, "chmod go-w "+tools)):
					t.Fatalf("a mask through a link in a group-writable directory: want exit 125 naming %s and the fix, got:\n%s", tools, r)
				}
			})
		}
	})
}
