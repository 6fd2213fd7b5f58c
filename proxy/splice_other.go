//go:build !linux

package proxy

import (
	"net"
	"sync/atomic"
	"time"
)

// spliceRelay copies nothing where splice(2) does not exist; relay copies instead.
func spliceRelay(_, _ net.Conn, _ time.Duration, _, _ *atomic.Int64) bool { return false }
