package sandboxinit

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestMakeSticky: a directory of the user's at 0755 (an image's /tmp, whose mode
// runc gave the tmpfs over it) comes out 1777; one already 1777 is left; a file or a
// missing path fails.
func TestMakeSticky(t *testing.T) {
	dir := t.TempDir()
	tmp := filepath.Join(dir, "tmp")
	if err := os.Mkdir(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Chmod(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := makeSticky([]string{tmp}); err != nil {
		t.Fatalf("makeSticky: %v", err)
	}
	var st unix.Stat_t
	if err := unix.Stat(tmp, &st); err != nil || st.Mode&0o7777 != 0o1777 {
		t.Errorf("mode after makeSticky: %o (%v); want 1777", st.Mode&0o7777, err)
	}
	if err := makeSticky([]string{tmp}); err != nil {
		t.Errorf("makeSticky of a 1777 directory: %v", err)
	}
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{file, filepath.Join(dir, "missing")} {
		if err := makeSticky([]string{bad}); err == nil {
			t.Errorf("makeSticky(%s) succeeded; want an error", bad)
		}
	}
}
