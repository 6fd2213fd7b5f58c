package sandboxinit

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// makeSticky gives each of dirs (Manifest.Sticky, directories the sandbox user owns)
// mode 1777 when it has another: runc gives a tmpfs the mode of the image's directory
// it covers, over the mount's mode option, and an image's 0755 /tmp would leave the
// command no /tmp to write. A directory that cannot be given the mode fails the run:
// the command would find /tmp unwritable.
func makeSticky(dirs []string) error {
	for _, d := range dirs {
		var st unix.Stat_t
		if err := unix.Lstat(d, &st); err != nil {
			return fmt.Errorf("%s: %w", d, err)
		}
		if st.Mode&unix.S_IFMT != unix.S_IFDIR {
			return fmt.Errorf("%s is not a directory", d)
		}
		if st.Mode&0o7777 == 0o1777 {
			continue
		}
		if err := unix.Chmod(d, 0o1777); err != nil {
			return fmt.Errorf("giving %s mode 1777 (the image's directory under it is %o): %w", d, st.Mode&0o7777, err)
		}
	}
	return nil
}
