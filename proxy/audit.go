package proxy

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// LogFile is the audit log's name inside the log directory; rotated files carry a
// suffix: LogFile+".1" (newest) to LogFile+".N" (oldest).
const LogFile = "proxy.jsonl"

// Audit log defaults.
const (
	DefaultLogMaxBytes = 10 << 20
	DefaultLogKeep     = 3
)

// Decision values of a Record.
const (
	DecisionAllow = "allow"
	DecisionDeny  = "deny"
	DecisionError = "error" // no policy decision was reached (the name did not resolve)
)

// Record is one audit log line: one HTTP request or one CONNECT tunnel. It holds no
// header and no query string.
type Record struct {
	Time       time.Time `json:"time"`
	Session    string    `json:"session,omitempty"`
	Method     string    `json:"method"`
	Host       string    `json:"host"`
	Port       int       `json:"port"`
	Path       string    `json:"path,omitempty"` // HTTP only; never the query
	Status     int       `json:"status"`
	BytesUp    int64     `json:"bytes_up"`   // request body, or client-to-target bytes of a tunnel
	BytesDown  int64     `json:"bytes_down"` // response body, or target-to-client bytes of a tunnel
	DurationMS int64     `json:"duration_ms"`
	Decision   string    `json:"decision"` // DecisionAllow, DecisionDeny or DecisionError
	Rule       string    `json:"rule,omitempty"`
	Reason     string    `json:"reason,omitempty"`
	Error      string    `json:"error,omitempty"`
}

// auditLog appends Records to dir/LogFile, rotating it by size. Safe for concurrent use.
type auditLog struct {
	mu     sync.Mutex
	path   string
	max    int64
	keep   int
	f      *os.File
	size   int64
	closed bool
}

func openAuditLog(dir string, max int64, keep int) (*auditLog, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating the proxy log directory: %w", err)
	}
	l := &auditLog{path: filepath.Join(dir, LogFile), max: max, keep: keep}
	if err := l.open(); err != nil {
		return nil, err
	}
	return l, nil
}

func (l *auditLog) open() error {
	f, err := os.OpenFile(l.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("opening the proxy log: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("opening the proxy log: %w", err)
	}
	l.f, l.size = f, fi.Size()
	return nil
}

// write appends rec as one line; after close it does nothing.
func (l *auditLog) write(rec Record) error {
	line, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	line = append(line, '\n')
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	if l.size > 0 && l.size+int64(len(line)) > l.max {
		if err := l.rotate(); err != nil {
			return err
		}
	}
	n, err := l.f.Write(line)
	l.size += int64(n)
	return err
}

// rotate shifts LogFile.i to LogFile.i+1, dropping the oldest, and starts a new file.
func (l *auditLog) rotate() error {
	if err := l.f.Close(); err != nil {
		return fmt.Errorf("rotating the proxy log: %w", err)
	}
	for i := l.keep; i >= 1; i-- {
		err := os.Rename(rotatedName(l.path, i-1), rotatedName(l.path, i))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("rotating the proxy log: %w", err)
		}
	}
	if l.keep == 0 {
		os.Remove(l.path)
	}
	return l.open()
}

func rotatedName(path string, i int) string {
	if i == 0 {
		return path
	}
	return fmt.Sprintf("%s.%d", path, i)
}

// close syncs and closes the file; later writes are dropped.
func (l *auditLog) close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	l.closed = true
	return errors.Join(l.f.Sync(), l.f.Close())
}
