//go:build !linux

package planner

// random fills b from crypto/rand.
func random(b []byte) { randomStd(b) }
