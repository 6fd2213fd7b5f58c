//go:build !linux

package proxy

import (
	"net"
	"sync/atomic"
	"syscall"
	"time"
)

// spliceRelay copies nothing where splice(2) does not exist; relay copies instead.
func spliceRelay(_, _ net.Conn, _ time.Duration, _, _ *atomic.Int64) bool { return false }

// spliceBody moves nothing where splice(2) does not exist; the body is copied instead.
func spliceBody(_ syscall.Conn, _ *net.TCPConn, _ *int64, _ func()) (int64, bool, error) {
	return 0, false, nil
}
