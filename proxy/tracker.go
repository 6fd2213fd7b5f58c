package proxy

import (
	"context"
	"net"
	"sync"
)

// tracker counts running handlers, which include whole tunnels, and holds the
// connections http.Server no longer tracks (hijacked clients, tunnel targets) so a
// Shutdown past its deadline can close them. Unlike a WaitGroup it allows begin while
// someone waits.
type tracker struct {
	mu    sync.Mutex
	n     int
	idle  chan struct{} // closed when n drops to 0; nil when nobody waits
	conns map[net.Conn]struct{}
}

func (t *tracker) begin() {
	t.mu.Lock()
	t.n++
	t.mu.Unlock()
}

func (t *tracker) end() {
	t.mu.Lock()
	t.n--
	if t.n == 0 && t.idle != nil {
		close(t.idle)
		t.idle = nil
	}
	t.mu.Unlock()
}

// running is the number of handlers running now.
func (t *tracker) running() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.n
}

// wait returns when no handler runs, or ctx's error when it is done first.
func (t *tracker) wait(ctx context.Context) error {
	for {
		t.mu.Lock()
		if t.n == 0 {
			t.mu.Unlock()
			return nil
		}
		if t.idle == nil {
			t.idle = make(chan struct{})
		}
		idle := t.idle
		t.mu.Unlock()
		select {
		case <-idle:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (t *tracker) addConn(c net.Conn) {
	t.mu.Lock()
	if t.conns == nil {
		t.conns = map[net.Conn]struct{}{}
	}
	t.conns[c] = struct{}{}
	t.mu.Unlock()
}

func (t *tracker) removeConn(c net.Conn) {
	t.mu.Lock()
	delete(t.conns, c)
	t.mu.Unlock()
}

// closeAll closes every tracked connection, ending the tunnels that use them.
func (t *tracker) closeAll() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for c := range t.conns {
		c.Close()
	}
}
