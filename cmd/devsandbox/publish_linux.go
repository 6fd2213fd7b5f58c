package main

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/devsandbox/devsandbox/config"
	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/isolator/shim"
)

// planPublish gives the plan the private directory where the sandbox serves its
// published ports (Unix sockets; short paths, like the proxy socket's).
func planPublish(p *isolator.Plan, h config.Host, session string) {
	if len(p.Egress.Forwards) > 0 {
		p.Egress.PublishDir = filepath.Join(p.Egress.SocketDir, "publish-"+session)
	}
}

// startPublish listens on the host's 127.0.0.1:HOST_PORT for each published port and
// relays every connection to the sandbox through its socket in the publish directory.
// A port already in use fails the run before the command starts.
func startPublish(p *isolator.Plan) (stop func(), err error) {
	dir := p.Egress.PublishDir
	if err := os.MkdirAll(p.Egress.SocketDir, 0o700); err != nil {
		return nil, fmt.Errorf("creating the socket directory: %w", err)
	}
	removeStaleSockets(p.Egress.SocketDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating the publish directory: %w", err)
	}
	var lns []net.Listener
	var wg sync.WaitGroup
	stop = func() {
		for _, ln := range lns {
			ln.Close()
		}
		wg.Wait()
		_ = os.RemoveAll(dir)
	}
	for _, f := range p.Egress.Forwards {
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(int(f.HostPort)))
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			stop()
			return nil, fmt.Errorf("%w: publishing %s: %v; pick another host port with --publish HOST_PORT:%d", isolator.ErrProtection, addr, err, f.SandboxPort)
		}
		lns = append(lns, ln)
		sock := filepath.Join(dir, strconv.Itoa(int(f.SandboxPort))+".sock")
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				c, err := ln.Accept()
				if errors.Is(err, net.ErrClosed) {
					return
				}
				if err != nil {
					continue
				}
				go shim.Relay(c, "unix", sock)
			}
		}()
	}
	return stop, nil
}
