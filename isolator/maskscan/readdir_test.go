package maskscan

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"golang.org/x/sys/unix"
)

// readDirT runs the portable walk the way Scan runs it on macOS.
func readDirT(root string, m Matcher) ([]Match, error) {
	mt, err := compile(m)
	if err != nil {
		return nil, err
	}
	tree, _, err := readDirScan(root, mt)
	if err != nil {
		return nil, err
	}
	return collect(root, tree, mt), nil
}

// TestReadDirScan: the portable walk finds what the reference walk finds (and
// TestScanRandom compares it with the Linux walk).
func TestReadDirScan(t *testing.T) {
	for _, tc := range []struct {
		name string
		m    Matcher
		tree []string // below a directory holding the root, proj when it has one
		want []string
	}{
		{"defaults", defaults, []string{
			".env", ".env.local", "README.md", "env", "sub/deeper/.env.production", "sub/.envrc",
			".git/.env", "node_modules/pkg/.env", "src/node_modules/.env", "sub/.env.d/inner", "sub/.env.d/.env", "empty/",
		}, []string{".env", ".env.local", "sub/.env.d/.env", "sub/deeper/.env.production"}},
		{"symlinks", defaults, []string{
			"outside/.env", "proj/linkdir -> ../outside", "proj/app/.env -> ../secret", "proj/secret",
			"proj/dangling/.env.x -> missing", "proj/dirlink/.env -> ../app",
		}, []string{"app/.env@", "dangling/.env.x@", "dirlink/.env@"}},
		{"allow and globs", Matcher{Mask: []string{".env*", "*.pem"}, Allow: []string{".env.example"}}, []string{
			".env", ".env.example", "a/key.pem", "a/.git/.env",
		}, []string{".env", "a/.git/.env", "a/key.pem"}},
		{"empty tree", defaults, nil, []string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			build(t, dir, tc.tree...)
			root := dir
			if _, err := os.Stat(dir + "/proj"); err == nil {
				root = dir + "/proj"
			}
			got, err := readDirT(root, tc.m)
			if err != nil {
				t.Fatal(err)
			}
			equal(t, "portable walk", rel(root, got), tc.want)
			if want := reference(t, root, tc.m); !slices.Equal(got, want) {
				t.Errorf("portable walk %q, reference %q", rel(root, got), rel(root, want))
			}
		})
	}
}

func TestReadDirScanErrors(t *testing.T) {
	dir := t.TempDir()
	build(t, dir, "file")
	for _, tc := range []struct {
		root string
		want error
	}{
		{dir + "/missing", fs.ErrNotExist},
		{dir + "/file", unix.ENOTDIR},
	} {
		if _, err := readDirT(tc.root, defaults); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.root, err, tc.want)
		}
	}
}

// TestReadDirScanUnreadable: as with the Linux walk, a directory of the scanning
// user that cannot be listed fails the scan.
func TestReadDirScanUnreadable(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("permissions do not apply to root")
	}
	root := t.TempDir()
	build(t, root, "closed/.env", "search/.env", "open/.env")
	for _, dir := range []string{"closed", "search"} {
		p := filepath.Join(root, dir)
		if err := os.Chmod(p, map[string]os.FileMode{"closed": 0, "search": 0o111}[dir]); err != nil {
			t.Fatal(err)
		}
		if _, err := readDirT(root, defaults); !errors.Is(err, ErrOwnUnreadable) {
			t.Errorf("%s unreadable: %v, want ErrOwnUnreadable", dir, err)
		}
		if err := os.Chmod(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	got, err := readDirT(root, defaults)
	if err != nil {
		t.Fatal(err)
	}
	equal(t, "after chmod", rel(root, got), []string{"closed/.env", "open/.env", "search/.env"})
}
