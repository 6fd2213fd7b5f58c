//go:build !linux

package engineaddr

// hostNetwork is never Here off Linux: the engine runs in a virtual machine (Docker
// Desktop) or on another host.
func hostNetwork(a Address, proc string) Network {
	return Network{Why: "not a Unix socket on Linux"}
}
