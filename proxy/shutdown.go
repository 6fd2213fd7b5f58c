package proxy

import (
	"context"
	"errors"
	"net/http"
	"os"
	"sync"
)

// Shutdown stops the server. It closes the listeners and removes the Unix sockets at
// once, waits for in-flight requests and tunnels until ctx is done, then closes the
// connections left, and syncs and closes the audit log. It returns ctx's error when it
// had to cut requests short (their records may then be missing). Call it once.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	servers, socks := s.servers, s.unix
	s.servers, s.unix = nil, nil
	s.closing = true
	for srv := range s.inner {
		servers = append(servers, srv) // decrypted connections: idle ones close at once
	}
	s.mu.Unlock()
	for _, p := range socks {
		os.Remove(p)
	}
	var wg sync.WaitGroup
	for _, srv := range servers {
		wg.Add(1)
		go func(srv *http.Server) {
			defer wg.Done()
			_ = srv.Shutdown(ctx) // closes listeners, waits for non-hijacked requests
		}(srv)
	}
	wg.Wait()
	err := s.track.wait(ctx) // tunnels and every other handler
	if err != nil {
		for _, srv := range servers {
			srv.Close()
		}
		s.track.closeAll()
	}
	s.tr.CloseIdleConnections()
	s.up.closeIdle(true)
	if s.log != nil {
		err = errors.Join(err, s.log.Close())
	}
	return err
}
