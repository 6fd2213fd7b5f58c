//go:build integration

package integration

import (
	"bytes"
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
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
// group-writable (by a group of others), so another member of the group can swap the link between
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
				// A group of others (nogroup, nobody's): the test user's own
				// private group is TestMaskThroughLinkInPrivateGroupDir's.
				if err := os.Lchown(tools, it.uid, sharedGID); err != nil {
					t.Fatal(err)
				}
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

// sharedGID is a group that is not the test user's: nogroup (nobody's primary group).
const sharedGID = 65534

// otherUID is another host user: nobody.
const otherUID = 65534

// TestMaskThroughLinkBelowSharedDir is the attack by another host user from above a
// read-only bind: the bind's root (tools, the test user's, 0755) lies in a directory
// others can write and that is not sticky, so another user can rename the whole tree
// away and put one of their own in its place between devsandbox's check of the link
// and the launch opening the bind's source (package pin opens it once, at launch, so
// what it pins is what lies there then, not what was checked). The run must stop
// (125) naming that directory and the fix. Sticky, only the tree's owner can rename
// it: followed. Before, directories above the bind's root were not looked at and the
// run followed the link (exit 0).
func TestMaskThroughLinkBelowSharedDir(t *testing.T) {
	forEachIsolator(t, func(t *testing.T, iso string) {
		for _, tc := range []struct {
			name string
			mode os.FileMode
			ok   bool
		}{{"world-writable", 0o777, false}, {"sticky world-writable", 0o777 | os.ModeSticky, true}} {
			t.Run(tc.name, func(t *testing.T) {
				p := newProject(t)
				p.write("opt/v2/secret", "SECRET-BAIT\n")
				p.mkdir("shared/tools")
				shared, tools, opt := p.path("shared"), p.path("shared/tools"), p.path("opt")
				link := filepath.Join(tools, "current")
				if err := os.Symlink(filepath.Join(opt, "v2"), link); err != nil {
					t.Fatal(err)
				}
				if err := os.Lchown(link, it.uid, it.gid); err != nil {
					t.Fatal(err)
				}
				if err := os.Chmod(shared, tc.mode); err != nil {
					t.Fatal(err)
				}
				through := filepath.Join(link, "secret")
				cfg := p.writeConfig(iso, "bindlink.toml", "[sandbox]\nro_binds = [\""+tools+"\", \""+opt+"\"]\nhide_paths = [\""+through+"\"]\n")
				r := run(t, p.dir, nil, "", "--isolator="+iso, "--config", cfg, "--egress=none", "--", "/bin/sh", "-c",
					"cat "+opt+"/v2/secret; echo ran")
				switch {
				case tc.ok && (r.code != 0 || r.stdout != "ran\n"):
					t.Fatalf("a mask through the user's link in a bind below a sticky directory: want exit 0 and the secret empty, got:\n%s", r)
				case !tc.ok && (r.code != 125 || strings.Contains(r.stdout, "ran") || !strings.Contains(r.stderr, shared+", above "+tools) || !strings.Contains(r.stderr, "chmod go-w "+shared)):
					t.Fatalf("a mask through a link in a bind below a world-writable directory: want exit 125 naming %s and the fix, got:\n%s", shared, r)
				}
			})
		}
	})
}

// TestMaskThroughLinkInPrivateGroupDir: a directory holding a followed link that is
// group-writable (umask 002, Fedora's and RHEL's default) is safe when the group is
// the user's private group (the test user's primary group, no other member in
// /etc/group, nobody else's primary group in /etc/passwd: useradd makes it so), and
// nothing else can write it. Before, it was refused as writable by others. The
// attacks: an ACL entry granting another user (nobody) write on the same directory,
// which the group bits (the ACL's mask) do not tell from the private group's, must
// stop the run (125) naming the entry and the setfacl fix; the private-group rule
// without reading the ACL followed the link. An ACL entry whose write the mask
// takes away (chmod go-w) grants nothing: followed, and nobody cannot write there.
func TestMaskThroughLinkInPrivateGroupDir(t *testing.T) {
	requirePrivateGroup(t)
	forEachIsolator(t, func(t *testing.T, iso string) {
		for _, tc := range []struct {
			name string
			mode os.FileMode
			acl  bool // an entry u:nobody:rwx, mask rwx (then the mode's group bits)
			ok   bool
		}{
			{"the private group", 0o775, false, true},
			{"an ACL entry for another user", 0o775, true, false},
			{"an ACL entry the mask denies", 0o755, true, true},
		} {
			t.Run(tc.name, func(t *testing.T) {
				p := newProject(t)
				tools, opt, through := bindLinkFixture(t, p)
				if err := os.Lchown(tools, it.uid, it.gid); err != nil {
					t.Fatal(err)
				}
				if tc.acl {
					setACL(t, tools, otherUID)
				}
				if err := os.Chmod(tools, tc.mode); err != nil { // an ACL's mask follows the group bits
					t.Fatal(err)
				}
				if tc.acl {
					// What the kernel lets nobody do there decides: with the
					// mask granting write, nobody plants a link.
					planted := filepath.Join(tools, "planted")
					out, err := exec.Command("setpriv", "--reuid="+strconv.Itoa(otherUID), "--regid="+strconv.Itoa(sharedGID), "--clear-groups", "--", "ln", "-s", "/", planted).CombinedOutput()
					os.Remove(planted)
					if (err == nil) == tc.ok {
						t.Fatalf("nobody writing %s (mode %s, ACL u:nobody:rwx): err %v, %s", tools, tc.mode, err, out)
					}
				}
				cfg := p.writeConfig(iso, "bindlink.toml", "[sandbox]\nro_binds = [\""+tools+"\", \""+opt+"\"]\nhide_paths = [\""+through+"\"]\n")
				r := run(t, p.dir, nil, "", "--isolator="+iso, "--config", cfg, "--egress=none", "--", "/bin/sh", "-c",
					"cat "+opt+"/v2/secret; echo ran")
				fix := "chmod go-w " + tools + "; setfacl -x u:" + strconv.Itoa(otherUID) + " " + tools
				switch {
				case tc.ok && (r.code != 0 || r.stdout != "ran\n"):
					t.Fatalf("a mask through the user's link in a directory of the private group: want exit 0 and the secret empty, got:\n%s", r)
				case !tc.ok && (r.code != 125 || strings.Contains(r.stdout, "ran") || !strings.Contains(r.stderr, tools+", which holds the link") || !strings.Contains(r.stderr, "uid "+strconv.Itoa(otherUID)+" through its ACL") || !strings.Contains(r.stderr, fix)):
					t.Fatalf("a mask through a link in a directory another user may write by its ACL: want exit 125 naming %s and the fix %q, got:\n%s", tools, fix, r)
				}
			})
		}
	})
}

// requirePrivateGroup fails (CI) or skips unless the test user's primary group is its
// alone in /etc/group and /etc/passwd, as useradd makes it where USERGROUPS_ENAB is
// on (Debian's, Fedora's default; scripts/setup-test-env.sh creates the user so).
func requirePrivateGroup(t *testing.T) {
	t.Helper()
	why := ""
	group, gerr := os.ReadFile("/etc/group")
	passwd, perr := os.ReadFile("/etc/passwd")
	gid := ":" + strconv.Itoa(it.gid) + ":"
	switch {
	case gerr != nil || perr != nil:
		why = "/etc/group or /etc/passwd unreadable"
	default:
		listed := false
		for _, l := range strings.Split(string(group), "\n") {
			f := strings.Split(l, ":")
			if len(f) == 4 && ":"+f[2]+":" == gid {
				listed = true
				if f[3] != "" && f[3] != it.name {
					why = "its group lists " + f[3]
				}
			}
		}
		for _, l := range strings.Split(string(passwd), "\n") {
			f := strings.Split(l, ":")
			if len(f) == 7 && ":"+f[3]+":" == gid && f[2] != strconv.Itoa(it.uid) {
				why = "it is " + f[0] + "'s primary group too"
			}
		}
		if !listed {
			why = "/etc/group does not list it"
		}
	}
	if why == "" {
		return
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("the test user's primary group (%d) must be its private group: %s", it.gid, why)
	}
	t.Skipf("the test user's primary group (%d) is not its private group: %s", it.gid, why)
}

// setACL gives dir an access ACL with an entry letting the user uid write: the
// owner's and others' entries from its mode, the owning group's r-x, mask rwx. The
// kernel sets the mode's group bits to the mask. Written as the attribute Linux
// stores (the acl package's setfacl is not needed).
func setACL(t *testing.T, dir string, uid uint32) {
	t.Helper()
	const undefined = 0xffffffff
	var b bytes.Buffer
	b.Write(binary.LittleEndian.AppendUint32(nil, 2))
	for _, e := range [][3]uint32{{0x01, 7, undefined}, {0x02, 7, uid}, {0x04, 5, undefined}, {0x10, 7, undefined}, {0x20, 5, undefined}} {
		b.Write(binary.LittleEndian.AppendUint16(nil, uint16(e[0])))
		b.Write(binary.LittleEndian.AppendUint16(nil, uint16(e[1])))
		b.Write(binary.LittleEndian.AppendUint32(nil, e[2]))
	}
	if err := unix.Setxattr(dir, "system.posix_acl_access", b.Bytes(), 0); err != nil {
		t.Fatalf("setting an ACL on %s: %v", dir, err)
	}
}
