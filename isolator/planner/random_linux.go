package planner

import "golang.org/x/sys/unix"

// random fills b from getrandom(2): crypto/rand's first read sets up the runtime's
// vDSO random state (a mapping and its first page faults) for a few bytes, on the
// launch's path. It falls back to crypto/rand when getrandom falls short.
func random(b []byte) {
	if n, err := unix.Getrandom(b, 0); err != nil || n != len(b) {
		randomStd(b)
	}
}
