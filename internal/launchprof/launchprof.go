//go:build !launchprofile

// Package launchprof writes a CPU profile of one devsandbox or bwrap-init process, in
// a build with the launchprofile tag only (scripts/profile-launch.sh, `make
// profile-launch`): a launch's 10 ms are too short for a profile of one, so the
// script merges thousands. In every other build Start and Stop do nothing and the
// package links nothing.
package launchprof

// Start does nothing without the launchprofile tag.
func Start() {}

// Stop does nothing without the launchprofile tag.
func Stop() {}
