//go:build !linux

package engineaddr

// hostNetwork is never Here off Linux: the engine runs in a virtual machine (Docker
// Desktop) or on another host.
func hostNetwork(a Address, proc string) Network {
	return Network{Why: "not a Unix socket on Linux"}
}

// peer is what can be told of the process listening on an engine's socket: nothing,
// off Linux.
type peer struct {
	net   Network
	binds bool
	who   string
	named bool
	name  string
}

func askPeer(path, sock, proc string) peer {
	return peer{net: Network{Why: "not a Unix socket on Linux"}, who: "not a Unix socket on Linux"}
}
