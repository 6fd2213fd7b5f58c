package etcsnap

import (
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// sealedRoot is a snapshot root under a temporary directory, whose sealed
// snapshots are removed at the end (TempDir's cleanup cannot, as an ordinary user).
func sealedRoot(b *testing.B) string {
	dir := b.TempDir()
	b.Cleanup(func() {
		if fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY, 0); err == nil {
			_ = removeAt(fd, "etc")
			unix.Close(fd)
		}
	})
	return filepath.Join(dir, "etc")
}

// launchFiles is the set of /etc files a default launch snapshots, each holding its
// own name.
func launchFiles() map[string]string {
	files := map[string]string{}
	for _, n := range []string{"passwd", "group", "hosts", "resolv.conf", "host.conf", "nsswitch.conf", "gai.conf", "hostname",
		"localtime", "timezone", "locale.alias", "default/locale", "ld.so.cache", "ld.so.conf", "ld.so.conf.d/a.conf",
		"ld.so.conf.d/b.conf", "ld.so.conf.d/c.conf", "shells", "profile", "bash.bashrc", "inputrc", "terminfo/README",
		"environment", "mime.types", "gitconfig", "ssh/ssh_config"} {
		files[n] = n + "\n"
	}
	return files
}

// BenchmarkOpenReused is the per-launch cost of a snapshot that is already there.
func BenchmarkOpenReused(b *testing.B) {
	_, es := hostFiles(b, launchFiles())
	benchReused(b, es)
}

// benchReused times Open of a snapshot of es that the first Open built.
func benchReused(b *testing.B, es []Entry) {
	root := sealedRoot(b)
	s, err := Open(root, es, later())
	if err != nil {
		b.Fatal(err)
	}
	if len(s.Notes) > 0 {
		b.Logf("notes: %q", s.Notes)
	}
	s.Close()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s, err := Open(root, es, later())
		if err != nil || s.Built {
			b.Fatal(err)
		}
		d, _ := s.Dir()
		d.Close()
		s.Close()
	}
}

// BenchmarkOpenBuilt is the cost of a launch that builds its snapshot.
func BenchmarkOpenBuilt(b *testing.B) {
	_, es := hostFiles(b, launchFiles())
	for i := 0; i < b.N; i++ {
		s, err := Open(filepath.Join(b.TempDir(), "etc"), es, later())
		if err != nil || !s.Built {
			b.Fatal(err)
		}
		s.Close()
	}
}

// BenchmarkOpenReusedTrees is BenchmarkOpenReused with the host's /etc directories
// the default view binds copied as trees (those that are: run it as an ordinary
// user, for whom /etc/ssl/private is closed; root's capabilities make trees bound).
func BenchmarkOpenReusedTrees(b *testing.B) {
	_, es := hostFiles(b, launchFiles())
	es = es[:len(es)-2] // the ssl/ and java/ mount points
	for _, d := range []string{"ssl", "alternatives", "java-17-openjdk"} {
		es = append(es, Entry{Name: d, Source: "/etc/" + d, Tree: true})
	}
	benchReused(b, es)
}

// BenchmarkOpenBuiltTrees is the cost of a launch that builds its snapshot with the
// host's /etc trees copied (run it as an ordinary user; see BenchmarkOpenReusedTrees):
// the first launch after a host change to /etc/ssl, say.
func BenchmarkOpenBuiltTrees(b *testing.B) {
	_, es := hostFiles(b, launchFiles())
	es = es[:len(es)-2]
	for _, d := range []string{"ssl", "alternatives", "java-17-openjdk"} {
		es = append(es, Entry{Name: d, Source: "/etc/" + d, Tree: true})
	}
	for i := 0; i < b.N; i++ {
		root := sealedRoot(b)
		s, err := Open(root, es, later())
		if err != nil || !s.Built {
			b.Fatal(err)
		}
		if i == 0 && len(s.Notes) > 0 {
			b.Logf("notes: %q", s.Notes)
		}
		s.Close()
	}
}
