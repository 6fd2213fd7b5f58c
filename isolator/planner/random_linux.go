package planner

import "github.com/devsandbox/devsandbox/internal/sysrandom"

// random fills b from getrandom(2) itself (package sysrandom: not the vDSO state
// crypto/rand sets up, 40-50 µs of a proxy-mode launch here); crypto/rand when
// getrandom fails or falls short.
func random(b []byte) {
	if sysrandom.Read(b) != nil {
		randomStd(b)
	}
}
