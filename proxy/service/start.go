package service

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/isolator/handoff"
	"github.com/devsandbox/devsandbox/isolator/sockdir"
)

// ExitBound is how long the end of a run waits for devsandbox-proxy to flush its audit
// log and exit (it gives requests in flight 2 s) before killing it.
const ExitBound = 3 * time.Second

// OpServe is the request devsandbox-proxy answers: serve until the control pipe ends.
const OpServe = "serve"

// Options say how the proxy is started; the zero value is devsandbox's.
type Options struct {
	// Binary is devsandbox-proxy; "" is the one next to the running program.
	Binary string
	// Stderr is devsandbox-proxy's standard error (nil: discarded).
	Stderr io.Writer
	// Warn receives the failure of the proxy's start in the background (nil: it is
	// written to Stderr). Start writes nothing to this process's own streams.
	Warn func(msg string)
	// Bound replaces ExitBound (tests).
	Bound time.Duration
	// Listeners, when set, is the proxy's end of a listener channel
	// (NewListenerChannel): the proxy also serves the listening sockets the caller
	// hands on the other end (SendListener). Start closes it.
	Listeners *os.File
	// Trigger, when set, starts the proxy (see Start); the caller watches the
	// listening sockets it hands on the channel with it. Start watches the proxy
	// socket with it and owns it from then on: stop closes it.
	Trigger *Trigger
	// NoSocket (with Listeners and Trigger): bind no Unix socket; the proxy serves
	// only the listeners handed on the channel, and starts on the first connection
	// pending on one the Trigger watches. For a sandbox that reaches the proxy only
	// on a listener it hands over (bwrap).
	NoSocket bool
}

// Start binds p's proxy socket (p.Egress.Proxy.Unix, mode 0600, in a directory only
// this user can enter) and has devsandbox-proxy serve it, with the settings and the
// environment of p. The socket listens from the start; the proxy process starts on
// demand, when the first connection is pending on the socket or on a listener the
// Trigger watches (a run that never connects starts none). That connection, and any
// other made before the proxy runs, waits in the backlog until the proxy accepts it.
// Everything that can be checked before the process runs (the program, the
// environment's files) is checked here, and fails Start.
//
// devsandbox-proxy gets the listening socket (handoff.FirstExtraFD), runs in its own
// process group (a Ctrl-C meant for the command does not reach it) with SIGTERM as
// its parent-death signal, and holds the control pipe's read end: however this
// process ends, the proxy sees end of file and shuts down.
//
// Only the socket is made before Start returns; the fork and exec happen in the
// background, off the launch path. If they fail, the error goes to o.Warn (else
// o.Stderr) and the socket stops listening, so the sandbox's connections are refused:
// egress fails closed.
// stop ends the control pipe and waits for the proxy, if it started (it flushes the
// audit log), killing it after the bound, then removes the socket.
func Start(p *isolator.Plan, o Options) (stop func(), err error) {
	defer func() {
		if err != nil {
			if o.Listeners != nil {
				o.Listeners.Close()
			}
			if o.Trigger != nil {
				o.Trigger.Close()
			}
		}
	}()
	bin := o.Binary
	if bin == "" {
		if bin, err = binary(p); err != nil {
			return nil, err
		}
	}
	env, err := Environ(p, os.ReadFile)
	if err != nil {
		return nil, err
	}
	if o.Stderr == nil {
		o.Stderr = io.Discard // not a buffer: the proxy runs as long as the session
	}
	if o.Bound == 0 {
		o.Bound = ExitBound
	}
	set := SettingsOf(p)
	set.Listeners = o.Listeners != nil
	sock := p.Egress.Proxy.Unix
	if o.NoSocket {
		if o.Listeners == nil || o.Trigger == nil {
			return nil, fmt.Errorf("%w: the egress proxy: no socket and no listener channel to serve", isolator.ErrProtection)
		}
		set.NoSocket, sock = true, ""
	}
	return spawn(bin, set, env, sock, o)
}

// spawn binds sock (none when "") and starts bin serving set with exactly env, in the
// background (see Start).
func spawn(bin string, set Settings, env []string, sock string, o Options) (stop func(), err error) {
	trig := o.Trigger
	if trig == nil {
		if trig, err = NewTrigger(); err != nil {
			return nil, fmt.Errorf("%w: the egress proxy: %w", isolator.ErrProtection, err)
		}
	}
	var files []*os.File // the proxy's descriptors, from handoff.FirstExtraFD
	if sock != "" {
		ln, err := listen(sock)
		if err == nil {
			if err = trig.Watch(ln); err != nil {
				ln.Close()
				os.Remove(sock)
			}
		}
		if err != nil {
			trig.Close()
			return nil, fmt.Errorf("%w: the egress proxy cannot listen on %s: %w", isolator.ErrProtection, sock, err)
		}
		files = append(files, ln)
	}
	if o.Listeners != nil {
		files = append(files, o.Listeners)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if !trig.wait() {
			for _, f := range files {
				f.Close()
			}
			return
		}
		// Pdeathsig fires when the thread that forked the child exits, not the
		// process: fork from a locked thread that lives until the proxy has exited.
		// Unlocked then, never ended: the runtime ends a thread whose goroutine
		// returns locked to it, and the thread may have forked another child of
		// this process before (bwrap, started from whichever thread Run was on,
		// with SIGKILL as its parent-death signal: ended as the run's end stopped
		// the proxy, it killed bwrap after the command's work, exit status 137).
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		req := handoff.Request{Op: OpServe, Settings: handoff.Args(set)} // encoded only when needed
		proc, err := handoff.Start(ctx, handoff.Program{Path: bin, Env: env, Stdio: isolator.Stdio{Err: o.Stderr},
			Files: files, SysProcAttr: sysProcAttr(), WaitDelay: o.Bound}, req)
		// The proxy has its own copies now (or, on error, nobody listens, and a
		// listener handed on the channel is closed with it).
		for _, f := range files {
			f.Close()
		}
		if err != nil {
			if ctx.Err() == nil {
				o.warn(fmt.Sprintf("the egress proxy did not start (%v); the sandbox's connections through it are refused", err))
			}
			return
		}
		<-proc.Done() // bounded by WaitDelay once ctx ends: then the proxy is killed
	}()
	return func() {
		cancel()
		trig.Close()
		<-done
		if sock != "" {
			os.Remove(sock)
		}
	}, nil
}

// listen binds a Unix socket at path, mode 0600, in a directory only this user can
// enter, and returns its listening descriptor. The socket exists, and queues
// connections, from here on.
func listen(path string) (*os.File, error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	// Chmod fails on a directory that is not ours.
	if err := os.Chmod(dir, 0o700); err != nil {
		return nil, err
	}
	ln, err := sockdir.Listen(path)
	if err != nil {
		return nil, err
	}
	defer ln.Close() // File returns a duplicate
	f, err := ln.File()
	if err != nil {
		os.Remove(path)
		return nil, err
	}
	return f, nil
}

// warn reports msg to Warn, else on Stderr.
func (o Options) warn(msg string) {
	switch {
	case o.Warn != nil:
		o.Warn(msg)
	case o.Stderr != nil:
		fmt.Fprintf(o.Stderr, "devsandbox: %s\n", msg)
	}
}
