// Package sockpeertest starts, for tests run as root, the listeners that sockpeer
// and its callers must refuse: one of this user in another root directory (chroot,
// as a sandbox's listener is), one whose listening process left the socket to a
// child and exited, and a process of this root directory that takes the exited
// listener's pid.
package sockpeertest
