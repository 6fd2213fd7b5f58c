package docker

import (
	"bufio"
	"net"
	"time"

	"github.com/docker/docker/pkg/stdcopy"

	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/isolator/container"
	"github.com/devsandbox/devsandbox/isolator/sandboxinit/wire"
	"github.com/devsandbox/devsandbox/isolator/tty"
)

// attached is a session (package container) over the connection the engine hijacked
// for an attach or an exec: frames go out on conn, the init's multiplexed stdout and
// stderr come back on r.
type attached struct {
	*container.Session
	report *wire.Report
	// outDone is closed once the init's output has ended (it exited).
	outDone chan struct{}
}

// attach sends hello on conn and starts relaying the session; masks are the layout's
// (container.Layout.Masks).
func (b *Isolator) attach(conn net.Conn, r *bufio.Reader, p *isolator.Plan, masks map[string]string, stdio isolator.Stdio, hello *wire.Hello, lazy *lazyAgent) (*attached, error) {
	report := container.NewReport(stdio, hello)
	if lazy != nil {
		report.OnAgentStream = lazy.onStream
	}
	var refused *refusalLog
	if hello.Nonce != "" && p.Egress.NeedsProxy() {
		refused = &refusalLog{dir: p.StateDir, session: p.Proxy.Session, warn: stdio.Err}
		report.ExpectRefusals(hello.Nonce, refused.write)
	}
	fo := tty.FilterOptions{AllowClipboard: p.TerminalClipboard}
	out, tidy := container.TerminalOut(stdio, hello, fo)
	out, flush := container.PlainOut(out, report, fo)
	sess, err := container.StartSession(container.NewStream(conn), stdio, hello, report,
		container.SessionOptions{Signals: b.Signals, Engine: "the engine", OOMMessage: p.Limits.OOMMessage(), Masks: masks, Tidy: tidy})
	if err != nil {
		return nil, err
	}
	a := &attached{Session: sess, report: report, outDone: make(chan struct{})}
	go func() {
		_, _ = stdcopy.StdCopy(out, report, r)
		_ = report.Flush()
		flush()
		refused.close()
		close(a.outDone)
	}()
	return a, nil
}

// wait returns once the init's output ended (it exited), or after grace once exited
// is closed (the engine says the command ended, output may still be in flight).
func (a *attached) wait(exited <-chan struct{}, grace time.Duration) {
	select {
	case <-a.outDone:
		return
	case <-exited:
	}
	select {
	case <-a.outDone:
	case <-time.After(grace):
	}
}
