package config

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// testHome makes a home directory under t.TempDir and returns it with an environment
// pointing at it.
func testHome(t *testing.T, extra ...string) (string, []string) {
	t.Helper()
	home := t.TempDir()
	return home, append([]string{"HOME=" + home, "USER=alice"}, extra...)
}

func writeFile(t *testing.T, path, content string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// writeUserFile writes the user config file under home.
func writeUserFile(t *testing.T, home, content string) string {
	t.Helper()
	return writeFile(t, filepath.Join(home, ".config", "devsandbox", "config.toml"), content)
}

func mustLoad(t *testing.T, opts LoadOptions) (*Config, []string) {
	t.Helper()
	opts.UID, opts.GID = 1000, 1000
	c, warnings, err := Load(opts)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return c, warnings
}

// asConfigError asserts err is an *Error and returns it.
func asConfigError(t *testing.T, err error) *Error {
	t.Helper()
	var ce *Error
	if !errors.As(err, &ce) {
		t.Fatalf("error %v (%T) is not a *config.Error", err, err)
	}
	return ce
}
