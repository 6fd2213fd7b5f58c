package bwrap

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// A regular host file goes to bwrap as the file itself (no pipe, nothing read into
// devsandbox); a missing one becomes an empty pipe; content and secrets go through
// pipes, and the error channel reports once every pipe is written.
func TestDataFiles(t *testing.T) {
	dir := t.TempDir()
	host := filepath.Join(dir, "hosts")
	if err := os.WriteFile(host, []byte("127.0.0.1 localhost\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(dir, "token")
	if err := os.WriteFile(secret, []byte("s3cret"), 0o600); err != nil {
		t.Fatal(err)
	}
	fs := []File{
		{FD: 5, Dest: "/etc/hosts", Kind: HostFile, Source: host},
		{FD: 6, Dest: "/etc/gone", Kind: HostFile, Source: filepath.Join(dir, "missing")},
		{FD: 7, Dest: "/etc/dir", Kind: HostFile, Source: dir},
		{FD: 8, Dest: "/x/content", Kind: Content, Content: []byte("generated")},
		{FD: 9, Dest: "/x/secret", Kind: SecretFile, Source: secret},
		// More than a pipe surely holds: fed in the background, not written up front.
		{FD: 10, Dest: "/x/big", Kind: Content, Content: []byte(strings.Repeat("x", 3*pipeMin))},
		{FD: 11, Dest: "/x/empty", Kind: Content},
		{FD: 12, Dest: "/x/page", Kind: Seccomp, Content: []byte(strings.Repeat("s", pipeMin))},
	}
	reads, errc, err := dataFiles(fs, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"127.0.0.1 localhost\n", "", "", "generated", "s3cret", strings.Repeat("x", 3*pipeMin), "", strings.Repeat("s", pipeMin)}
	for i, r := range reads {
		st, err := r.Stat()
		if err != nil {
			t.Fatal(err)
		}
		isPipe := st.Mode()&os.ModeNamedPipe != 0
		if wantFile := i == 0; isPipe == wantFile {
			t.Errorf("%s: pipe = %v, want a pipe only for entries that are not regular host files", fs[i].Dest, isPipe)
		}
		if i == 0 {
			hs, _ := os.Stat(host)
			if st.Sys().(*syscall.Stat_t).Ino != hs.Sys().(*syscall.Stat_t).Ino {
				t.Errorf("%s: descriptor is not the host file", fs[i].Dest)
			}
		}
		b, err := io.ReadAll(r)
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != want[i] {
			t.Errorf("%s: read %q, want %q", fs[i].Dest, b, want[i])
		}
		r.Close()
	}
	if err := <-errc; err != nil {
		t.Errorf("writers: %v", err)
	}
}

// Without pipes to feed, the channel is ready at once.
func TestDataFilesNoPipes(t *testing.T) {
	host := filepath.Join(t.TempDir(), "hosts")
	if err := os.WriteFile(host, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	reads, errc, err := dataFiles([]File{{FD: 5, Dest: "/etc/hosts", Kind: HostFile, Source: host}}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer reads[0].Close()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}

// A missing secret file aborts before launch.
func TestDataFilesMissingSecret(t *testing.T) {
	_, _, err := dataFiles([]File{{FD: 5, Dest: "/x/secret", Kind: SecretFile, Source: filepath.Join(t.TempDir(), "nope")}}, nil, nil)
	if err == nil {
		t.Fatal("want an error for a missing secret file")
	}
}
