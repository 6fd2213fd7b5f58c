package planner

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// A mountinfo of this machine's kind: the root file system, a self-bind, a project's
// directory bound elsewhere, a file bound onto a path, a tmpfs, the same file system
// mounted whole a second time, and a name with a space (escaped).
const testMountInfo = `27 1 254:0 / / rw,relatime - ext4 /dev/vda rw
45 27 254:0 /var/lib/docker /var/lib/docker rw,relatime shared:1 - ext4 /dev/vda rw
60 27 254:0 /home/u/proj/conf /etc/conf rw,relatime - ext4 /dev/vda rw
61 27 254:0 /home/u/proj/dev.toml /home/u/cfg/bound.toml rw,relatime - ext4 /dev/vda rw
62 27 0:42 / /tmp rw - tmpfs tmpfs rw
63 27 8:1 / /data rw - ext4 /dev/sda1 rw
64 27 8:1 /team /srv/team\040share rw - ext4 /dev/sda1 rw
bad line
`

func TestMountTable(t *testing.T) {
	mt := parseMountInfo([]byte(testMountInfo))
	if len(mt) != 7 || mt[6].at != "/srv/team share" || mt[2].root != "/home/u/proj/conf" {
		t.Fatalf("parsed: %+v", mt)
	}
	for p, want := range map[string]bool{"/home/u/cfg/bound.toml": true, "/etc/conf": true, "/home/u/cfg": false, "/": false, "/etc/conf/a.toml": false} {
		if got := mt.isMountPoint(p); got != want {
			t.Errorf("isMountPoint(%s): %v, want %v", p, got, want)
		}
	}
	for _, tc := range []struct {
		p    string
		want []mountAlias
	}{
		{"/etc/conf/dev.toml", []mountAlias{{"/home/u/proj/conf/dev.toml", "a mount shows /home/u/proj/conf at /etc/conf"}}},
		{"/home/u/cfg/bound.toml", []mountAlias{{"/home/u/proj/dev.toml", "a mount shows /home/u/proj/dev.toml at /home/u/cfg/bound.toml"}}},
		// The other way round: a file of the project is also shown elsewhere.
		{"/home/u/proj/conf/x.toml", []mountAlias{{"/etc/conf/x.toml", "its file system is also mounted at /etc/conf"}}},
		{"/home/u/other.toml", nil},
		{"/var/lib/docker/x", nil}, // a self-bind is no other name
		{"/tmp/x.toml", nil},
		{"/srv/team share/a/dev.toml", []mountAlias{{"/data/team/a/dev.toml", "a mount shows /data/team at /srv/team share"}}},
		{"/data/team/dev.toml", []mountAlias{{"/srv/team share/dev.toml", "its file system is also mounted at /srv/team share"}}},
		{"/data/other.toml", nil},
	} {
		if got := mt.aliases(tc.p); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("aliases(%s):\n%+v\nwant\n%+v", tc.p, got, tc.want)
		}
	}
}

// byMounts: a mount point needs trust whatever its source; an alias when a sandbox
// can write it; an unreadable table decides for trust.
func TestByMounts(t *testing.T) {
	mt := parseMountInfo([]byte(testMountInfo))
	byPath := func(p string) (string, bool) {
		if strings.HasPrefix(p, "/home/u/proj/") {
			return "it lies in /home/u/proj: the project", true
		}
		return "", false
	}
	for _, tc := range []struct {
		p, want string
		ok      bool
	}{
		{"/etc/conf/dev.toml", "it is also /home/u/proj/conf/dev.toml (a mount shows /home/u/proj/conf at /etc/conf): it lies in /home/u/proj: the project", true},
		{"/home/u/cfg/bound.toml", "it is a mount point: a file bound onto its path shows what its source holds, and the source may lie where a sandbox can write it", true},
		{"/srv/team share/dev.toml", "", false},
		{"/home/u/cfg/dev.toml", "", false},
	} {
		why, ok := byMounts(tc.p, mt, nil, byPath)
		if why != tc.want || ok != tc.ok {
			t.Errorf("byMounts(%s): %q %v\nwant %q %v", tc.p, why, ok, tc.want, tc.ok)
		}
	}
	if why, ok := byMounts("/x", nil, errors.New("permission denied"), byPath); !ok || !strings.Contains(why, "cannot be read (permission denied)") {
		t.Errorf("an unreadable table: %q %v", why, ok)
	}
}

// What byMounts costs a run with an untrusted --config file outside every bind: one
// read of this process's mount table, its parse, and the search for other names.
func BenchmarkMountCheck(b *testing.B) {
	pr := OS("/")
	none := func(string) (string, bool) { return "", false }
	for b.Loop() {
		buf, err := pr.ReadFile(mountInfoPath)
		if _, ok := byMounts("/home/u/cfg/dev.toml", parseMountInfo(buf), err, none); ok {
			b.Fatal("needs trust")
		}
	}
}
