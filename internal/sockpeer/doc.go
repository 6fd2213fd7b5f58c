// Package sockpeer tells of the process listening on a Unix socket, as the kernel
// names it to a connection (SO_PEERCRED, SO_PEERPIDFD): its pid and user, whether the
// process that called listen(2) still runs, and whether it shares this process's
// root directory — a sandbox's listener (bwrap's new root, a container's) does not.
// It words no refusal: each caller names its own socket, what it expected there and
// the fix.
package sockpeer
