// Package audit is the egress proxy's audit log: one JSON line per HTTP request or
// CONNECT tunnel (Record), appended by a Writer that rotates the file by size, and read
// back by ReadLog and Follow, oldest first, across rotated files. Suggest turns denied
// records into allow entries.
//
// The package is separate from the proxy so that the devsandbox CLI can read the log
// (devsandbox logs proxy) without linking the proxy's HTTP stack; it imports only the
// standard library.
//
// A Record never holds a header value or a query string. Not guaranteed: a path may itself
// carry a token when an API puts one there; a line cut short by a crash is skipped.
package audit

import "time"

// LogFile is the audit log's name inside the log directory; rotated files carry a
// suffix: LogFile+".1" (newest) to LogFile+".N" (oldest).
const LogFile = "proxy.jsonl"

// Decision values of a Record.
const (
	DecisionAllow = "allow"
	DecisionDeny  = "deny"
	DecisionError = "error" // no policy decision was reached (the name did not resolve)
)

// Rules recorded when no allow or deny entry decided; otherwise Record.Rule is the
// entry as written.
const (
	RuleDefault     = "default"         // no entry matched; the policy's default applied
	RulePrivate     = "private address" // a special-purpose address no allow entry names
	RuleAuth        = "proxy-auth"      // no or wrong Proxy-Authorization on a TCP endpoint
	RuleBadRequest  = "bad request"     // not a request the proxy forwards
	RulePlaceholder = "placeholder"     // a credential's placeholder sent to a host it is not for
	RuleMisdirected = "misdirected"     // a decrypted request for another host than its tunnel's
	RuleRequest     = "request rule"    // a tunnel to a host a request rule limits, without MITM
)

// Record is one audit log line: one HTTP request (including each request inside a
// tunnel the proxy decrypted) or one CONNECT tunnel. It holds no header value and no
// query string.
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
	// MITM marks a tunnel the proxy decrypted, and each request it saw inside one.
	MITM bool `json:"mitm,omitempty"`
	// Credential names the headers of the credentials the proxy added (never a value).
	Credential string `json:"credential,omitempty"`
}
