//go:build !linux

package lastingthread

// onMainThread: no Pdeathsig outside Linux; every call is handed off.
func onMainThread() bool { return false }
