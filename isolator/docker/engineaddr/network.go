package engineaddr

// Network is what devsandbox can tell of the network an engine's containers'
// "host" network is: this machine's network namespace, or another's.
type Network struct {
	// Here is true only when the engine is shown to run in this machine's network
	// namespace: the process listening on its Unix socket is dockerd, and that
	// process's network namespace is this process's.
	Here bool
	// Why says, when Here is false, what was found instead (for --debug and tests).
	Why string
}

// HostNetwork tells whether the engine at a runs its containers' host network in
// this machine's network namespace, so that this machine's addresses are that host's.
// It asks the kernel who listens on a's Unix socket (SO_PEERCRED on a connection of
// its own) and reads that process's name and network namespace in /proc: Here only
// for dockerd, or root's systemd (docker.socket: socket activation of a rootful
// dockerd), in this process's namespace. Anything else counts as elsewhere — a
// tcp:// engine, a socket that ssh -L, socat or Docker Desktop's backend serves, a
// rootless dockerd in rootlesskit's namespace, a user's systemd (a rootless engine's
// socket unit), a listener in a PID namespace this process cannot see
// or a /proc that hides it: the caller then reads the engine host's addresses in a
// container of its host network, the check's fail-closed side. Unlike Local, which
// says whether binds reach this machine's files, it is not about files at all.
//
// Limits: a process of this machine's network namespace may call itself dockerd, and
// root's systemd is believed for whatever its socket unit starts
// (the name is the process's own choice: only a process of the user's, or root's, can
// listen where docker.host points); the process that listened may be gone and its PID
// reused between the question and the answer (microseconds).
func (a Address) HostNetwork() Network {
	return hostNetwork(a, "/proc")
}
