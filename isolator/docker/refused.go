package docker

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/devsandbox/devsandbox/isolator/sandboxinit/wire"
	"github.com/devsandbox/devsandbox/proxy/audit"
)

// refusalLog writes to a kept session's audit log the proxy connections the kept
// container's keeper refused (503) that may have been the session's: they reached no
// proxy, so no proxy recorded them. Its init reports them (wire.RefusedMarker); the
// session's file is opened at the first. A nil *refusalLog does nothing.
type refusalLog struct {
	dir, session string
	warn         io.Writer // where a log that cannot be written is said, once

	mu     sync.Mutex
	w      *audit.Writer
	failed bool
}

// write records rf (the Report's callback).
func (l *refusalLog) write(rf wire.Refusal) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.failed {
		return
	}
	err := error(nil)
	if l.w == nil {
		l.w, err = audit.Open(l.dir, l.session, audit.Options{})
	}
	if err == nil {
		err = l.w.Write(audit.Record{
			Kind: audit.KindRefused, Time: time.Now(), Session: l.session,
			Method: rf.Method, Host: rf.Host, Port: rf.Port, Path: rf.Path,
			Status: 503, Decision: audit.DecisionDeny, Rule: audit.RuleKeptEndpoint, Reason: rf.Reason,
		})
	}
	if err != nil {
		l.failed = true
		if l.warn != nil {
			fmt.Fprintf(l.warn, "devsandbox: a proxy connection the kept container refused could not be written to the audit log: %v\n", err)
		}
	}
}

// close closes the session's file, if one was opened.
func (l *refusalLog) close() {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.w != nil {
		_ = l.w.Close()
		l.w = nil
	}
	l.failed = true // nothing after the output ended
}
