//go:build unix

package imageuse

import "syscall"

const syscallNoFollow = syscall.O_NOFOLLOW
