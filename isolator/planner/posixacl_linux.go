package planner

import (
	"errors"

	"golang.org/x/sys/unix"
)

// maxACL bounds the access ACL read: the kernel's limit on an attribute's value
// (XATTR_SIZE_MAX, linux/limits.h).
const maxACL = 64 << 10

// readACL is Probe.ACL on the host: dir's access ACL as stored, nil when it has none
// or its file system keeps none. The attribute is read without following a final
// symlink.
func readACL(dir string) ([]byte, error) {
	buf := make([]byte, 256) // 31 entries: most ACLs in one call
	for {
		n, err := unix.Lgetxattr(dir, aclAccessXattr, buf)
		switch {
		case errors.Is(err, unix.ENODATA), errors.Is(err, unix.ENOTSUP):
			return nil, nil
		case errors.Is(err, unix.ERANGE) && len(buf) < maxACL:
			buf = make([]byte, maxACL)
			continue
		case err != nil:
			return nil, err
		}
		return buf[:n], nil
	}
}
