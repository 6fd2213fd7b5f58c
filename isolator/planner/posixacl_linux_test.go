package planner

import (
	"errors"
	"fmt"
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// TestReadACLKernel: readACL reads what the kernel keeps, and the kernel keeps the
// mode's group bits at the mask (acl(5)): an entry granting another user write shows
// in the group bits, and chmod g-w takes the write out of the mask, so it grants
// nothing. safeHolder reads no ACL where the group bits lack write on that ground.
func TestReadACLKernel(t *testing.T) {
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if b, err := readACL(dir); b != nil || err != nil {
		t.Fatalf("readACL of a directory without an ACL = %x, %v; want nil, nil", b, err)
	}
	err := unix.Setxattr(dir, aclAccessXattr, acl(aclObj(aclUserObj, 7), aclNamed(aclUser, 7, 65534), aclObj(aclGroupObj, 5), aclObj(aclMask, 7), aclObj(aclOther, 5)), 0)
	if errors.Is(err, unix.ENOTSUP) {
		t.Skipf("%s keeps no ACLs", dir)
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, step := range []struct {
		mode os.FileMode // set before reading (0: as it is)
		want string
	}{{0, "-rwxrwxr-x {[65534] [] false false}"}, {0o755, "-rwxr-xr-x {[] [] false false}"}} {
		if step.mode != 0 {
			if err := os.Chmod(dir, step.mode); err != nil {
				t.Fatal(err)
			}
		}
		b, err := readACL(dir)
		if err != nil {
			t.Fatal(err)
		}
		w, err := parseACLWriters(b)
		if err != nil {
			t.Fatal(err)
		}
		fi, err := os.Lstat(dir)
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprint(fi.Mode().Perm(), " ", w); got != step.want {
			t.Fatalf("mode and writers = %s; want %s", got, step.want)
		}
	}
}
