package krun

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/devsandbox/devsandbox/isolator"
)

// pinService takes a socket whose listener shares this process's root, and the path
// it returns reaches that socket even once another is put at the name; a name that
// is not a socket, or a link, is refused. (A listener in another root, a sandbox's,
// is TestKrunTakesNoPlantedService's.)
func TestPinService(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "podman.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	pinned, f, err := pinService(sock)
	if err != nil {
		t.Fatalf("a listener of this process: %v", err)
	}
	defer f.Close()
	// Swapped: the pinned path still reaches the first listener.
	if err := os.Rename(sock, sock+".old"); err != nil {
		t.Fatal(err)
	}
	l2, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	go func() {
		if c, err := l2.Accept(); err == nil {
			t.Error("the pinned path reached the socket swapped in at the name")
			c.Close()
		}
	}()
	c, err := net.Dial("unix", pinned)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if a, err := l.Accept(); err != nil {
		t.Fatal(err)
	} else {
		a.Close()
	}

	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := pinService(file); !errors.Is(err, isolator.ErrProtection) || !strings.Contains(err.Error(), file+", where podman's API socket should be, is not a socket") {
		t.Errorf("a regular file: %v", err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(sock, link); err != nil {
		t.Fatal(err)
	}
	if _, _, err := pinService(link); err == nil {
		t.Error("a link at the socket's name was followed")
	}
}
