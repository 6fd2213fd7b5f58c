//go:build !linux

package diskguard

import "github.com/devsandbox/devsandbox/isolator"

// pinSubmounts watches nothing more off Linux: there is no mount table to read (a
// file system mounted below a directory the sandbox writes stays unwatched).
func pinSubmounts(map[string]int, []string) ([]string, error) { return nil, nil }

// Watched is what a run of p would watch now, for doctor: Paths(p).
func Watched(p *isolator.Plan) []string { return Paths(p) }
