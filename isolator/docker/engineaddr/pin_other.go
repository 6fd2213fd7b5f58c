//go:build !linux

package engineaddr

// Pin returns a as it is: off Linux the engine's socket is Docker Desktop's, in the
// user's own directory, and no /proc names an open socket to connect through.
func (a Address) Pin() (Address, error) { return a, nil }
