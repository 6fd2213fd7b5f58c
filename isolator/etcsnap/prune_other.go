//go:build !linux

package etcsnap

// Prune has nothing to remove where bwrap does not run.
func Prune(root string, keep int, dryRun bool) ([]string, error) { return nil, nil }
