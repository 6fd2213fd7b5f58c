package config

import (
	"errors"
	"fmt"
	"path/filepath"
	"testing"
)

// A docker.home is the host home's path or lies apart from it: one strictly above or
// below it is refused (ErrInvalid), as a relative path is.
func TestContainerHome(t *testing.T) {
	for _, tt := range []struct {
		home, hostHome string
		ok             bool
	}{
		{"/home/me", "/home/me", true},
		{"/home/me/", "/home/me", true},
		{"/home/sandbox", "/home/me", true},
		{"/home/me2", "/home/me", true},
		{"/Users/me", "/home/me", true},
		{"/home", "/home/me", false},
		{"/", "/home/me", false},
		{"/home/me/box", "/home/me", false},
		{"/home/me/a/b/", "/home/me", false},
		{"/home/me", "/home/me/work", false},
		{"/home/me", "/", false},
		{"home/me", "/home/you", false},
	} {
		err := containerHome(tt.home, tt.hostHome)
		if (err == nil) != tt.ok || err != nil && !errors.Is(err, ErrInvalid) {
			t.Errorf("containerHome(%q, %q) = %v, want ok %v", tt.home, tt.hostHome, err, tt.ok)
		}
	}
}

// A file's docker.home inside or above the host home stops the load, naming the file,
// the line and the key.
func TestContainerHomeOverlapInFile(t *testing.T) {
	home, environ := testHome(t)
	for _, h := range []string{home + "/box", filepath.Dir(home)} {
		file := writeFile(t, filepath.Join(home, "c.toml"), fmt.Sprintf("[docker]\nhome = %q\n", h))
		_, _, err := Load(LoadOptions{Environ: environ, Flags: Flags{ConfigFile: file}, Writable: nowhere})
		if err == nil {
			t.Fatalf("docker.home %q with the home at %s: no error", h, home)
		}
		ce := asConfigError(t, err)
		if ce.File != file || ce.Line != 2 || ce.Key != "docker.home" || !errors.Is(err, ErrInvalid) {
			t.Errorf("docker.home %q: got File %q Line %d Key %q (%v)", h, ce.File, ce.Line, ce.Key, err)
		}
	}
}

// The default docker.home is /home/<user>, or the host home's path where /home/<user>
// lies above or below it.
func TestDefaultContainerHome(t *testing.T) {
	for _, tt := range []struct{ home, user, want string }{
		{"/home/me", "me", "/home/me"},
		{"/Users/me", "me", "/home/me"},
		{"/home/me/work", "me", "/home/me/work"},
		{"/home", "me", "/home"},
		{"/", "root", "/"},
	} {
		if got := defaultContainerHome(Host{Home: tt.home, User: tt.user}); got != tt.want {
			t.Errorf("home %s, user %s: docker.home %s, want %s", tt.home, tt.user, got, tt.want)
		}
	}
}
