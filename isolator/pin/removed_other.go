//go:build !linux

package pin

// Removed lists the pinned sources removed on the host since: none outside Linux,
// where nothing is pinned by descriptor.
func (s *Set) Removed() []string { return nil }
