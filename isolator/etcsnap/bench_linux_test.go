package etcsnap

import (
	"path/filepath"
	"testing"
)

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
	root := filepath.Join(b.TempDir(), "etc")
	s, err := Open(root, es, later())
	if err != nil {
		b.Fatal(err)
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
