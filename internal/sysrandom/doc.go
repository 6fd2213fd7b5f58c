// Package sysrandom reads random bytes with the getrandom(2) system call itself.
//
// crypto/rand, and golang.org/x/sys/unix.Getrandom since it calls the runtime's
// vDSO getrandom, set up the runtime's vDSO random state on their first read (a
// mapping and its page faults: 30-50 µs of a launch measured here) for the few bytes
// a launch needs for a name; crypto/rand's package init would also run in the
// sandbox's init, which links some of its callers.
package sysrandom
