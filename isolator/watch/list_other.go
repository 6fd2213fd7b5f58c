//go:build !linux

package watch

// listNames cannot list here without os.File's costs: every tripwire is asked with
// lstat(2) (see the Linux listNames).
func listNames(string) (map[string]bool, bool) { return nil, false }
