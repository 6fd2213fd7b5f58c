// Package audit is the egress proxy's audit log: one JSON line per decision (Record),
// appended by a Writer to a file of its own per session, and read back by ReadLog and
// Follow across every session's file. Suggest turns denied records into allow entries;
// FormatText and FormatJSON render records for a terminal.
//
// The log is built to survive the sandbox it records. A Writer never deletes another
// session's records, and keeps every allowed decision of its own; what a sandbox can
// produce at no cost (denied and failed requests) is written up to a per-session
// budget, then counted in KindDropped records. Every record is bounded (MaxRecordBytes):
// a long path is cut, and its length recorded. Files older than the retention are
// removed when a Writer opens, whatever their content: that is the only deletion.
//
// The package is separate from the proxy so that the devsandbox CLI can read the log
// (devsandbox logs proxy) without linking the proxy's HTTP stack; it imports only the
// standard library and internal/termsafe. A line of the log is JSON whose characters a
// terminal would act on are escapes (encode), so a pager or cat shows them too.
//
// A Record never holds a header value or a query string. Not guaranteed: a path may
// itself carry a token when an API puts one there; a line cut short by a crash is
// skipped; a request still in flight when its proxy is killed is not recorded.
//
// # Adding a kind of record
//
// A Record is a decision (Decision, Rule, Reason) about a destination (Host, Port) by
// one session, of a Kind. A new kind adds a Kind constant and, for what only it has,
// one pointer field to a struct of its own with `json:",omitempty"`, cut to its
// bounds from Record.bound; FormatText gets a case for it. KindPush is the example: a
// git push the proxy decided on, whose Push gets what the rest of the line leaves of
// MaxRecordBytes (Push.fit). The Writer needs nothing: it budgets
// by Decision (every allowed record is kept, others count against the budget), and
// Suggest ignores kinds other than KindRequest.
package audit

import (
	"encoding/json"
	"slices"
	"strconv"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/devsandbox/devsandbox/internal/termsafe"
)

// LegacyLogFile is the single log file (with rotations LegacyLogFile+".1" …) that
// versions before per-session files wrote in the log directory; ReadLog and Follow
// still read it, oldest of all.
const LegacyLogFile = "proxy.jsonl"

// LogSubdir is the directory, inside the log directory, of the per-session files:
// "<start time>-<session>.jsonl".
const LogSubdir = "proxy-log"

// Kinds of Record.
const (
	KindRequest = "request" // one HTTP request (decrypted ones included) or CONNECT tunnel
	KindDropped = "dropped" // Dropped records of the session were counted, not written
	KindPush    = "push"    // a git push the proxy decided on by proxy.git_push (Record.Push)
	// KindRefused is a connection to a kept container's proxy endpoint that its keeper
	// refused (503, RuleKeptEndpoint) because it could not tell which session's proxy
	// it was for: no proxy saw it, and it is in the log of each session it may have
	// been. Host, Port and Path are what its request line named.
	KindRefused = "refused"
)

// Decision values of a Record.
const (
	DecisionAllow = "allow"
	DecisionDeny  = "deny"
	DecisionError = "error" // no policy decision was reached (the name did not resolve)
)

// Rules recorded when no allow or deny entry decided; otherwise Record.Rule is the
// entry as written.
const (
	RuleDefault      = "default"         // no entry matched; the policy's default applied
	RulePrivate      = "private address" // a special-purpose address no allow entry names
	RuleHost         = "host loopback"   // the proxy's own host: loopback or unspecified, never opened
	RuleAuth         = "proxy-auth"      // no or wrong Proxy-Authorization on a TCP endpoint
	RuleBadRequest   = "bad request"     // not a request the proxy forwards (a malformed target)
	RulePlaceholder  = "placeholder"     // a credential's placeholder sent to a host it is not for
	RuleMisdirected  = "misdirected"     // a decrypted request for another host than its tunnel's
	RuleRequest      = "request rule"    // a tunnel to a host a request rule limits, without MITM
	RuleCleartext    = "cleartext"       // plain HTTP inside a decrypted CONNECT that expects TLS
	RuleGitPush      = "proxy.git_push"  // a git push outside the policy, or one the proxy could not read
	RuleGitSSH       = "proxy.git_ssh"   // a CONNECT to port 22 (git over ssh) while proxy.git_push is set
	RuleKeptEndpoint = "kept endpoint"   // KindRefused: the kept container's keeper refused it
)

// Bounds of a Record's fields, in bytes as JSON encodes them; a field over its bound
// is cut (Path records its full length in PathBytes). Together they keep every line
// within MaxRecordBytes.
const (
	MaxPathBytes   = 1024
	maxHostBytes   = 255
	maxShortBytes  = 64  // method, session, special
	maxRuleBytes   = 256 // rule, credential
	maxReasonBytes = 512 // reason, error
	// MaxRecordBytes bounds one line of the log.
	MaxRecordBytes = 4096
)

// Record is one audit log line. For KindRequest: one HTTP request (including each
// request inside a tunnel the proxy decrypted) or one CONNECT tunnel. It holds no
// header value and no query string.
type Record struct {
	Kind       string    `json:"kind,omitempty"` // "" in logs written before kinds: KindRequest
	Time       time.Time `json:"time"`
	Session    string    `json:"session,omitempty"`
	Method     string    `json:"method"`
	Host       string    `json:"host"`
	Port       int       `json:"port"`
	Path       string    `json:"path,omitempty"`       // HTTP only; never the query; cut to MaxPathBytes
	PathBytes  int       `json:"path_bytes,omitempty"` // the path's length, when Path was cut
	Status     int       `json:"status"`
	BytesUp    int64     `json:"bytes_up"`   // request body, or client-to-target bytes of a tunnel
	BytesDown  int64     `json:"bytes_down"` // response body, or target-to-client bytes of a tunnel
	DurationMS int64     `json:"duration_ms"`
	Decision   string    `json:"decision"` // DecisionAllow, DecisionDeny or DecisionError
	Rule       string    `json:"rule,omitempty"`
	Reason     string    `json:"reason,omitempty"`
	Error      string    `json:"error,omitempty"`
	// Special is the class of special-purpose address (ClassLoopback, ClassPrivate, …)
	// that decided a RulePrivate or RuleHost denial: the host itself, or what it
	// resolved to.
	Special string `json:"special,omitempty"`
	// MITM marks a tunnel the proxy decrypted, and each request it saw inside one.
	MITM bool `json:"mitm,omitempty"`
	// Credential names the headers of the credentials the proxy added (never a value).
	Credential string `json:"credential,omitempty"`
	// Dropped (KindDropped) is how many records the session left out since its
	// previous KindDropped record.
	Dropped int `json:"dropped,omitempty"`
	// Push (KindPush) is the push decided on.
	Push *Push `json:"push,omitempty"`
}

// Bounds of a Push's strings.
const (
	maxRepoBytes = 512
	maxIDBytes   = 64
)

// Push is what a KindPush record holds: the repository and its ref updates.
type Push struct {
	Repo string      `json:"repo"` // the repository's URL, without /git-receive-pack
	Refs []RefUpdate `json:"refs,omitempty"`
	// RefsTotal is the number of ref updates the push asked for, when Refs holds
	// fewer (a record keeps as many as fit, the refused ones first).
	RefsTotal int `json:"refs_total,omitempty"`
}

// RefUpdate is one ref a push asked to change, from Old to New (object ids; all
// zeros for a ref created or deleted).
type RefUpdate struct {
	Ref     string `json:"ref"`
	Old     string `json:"old"`
	New     string `json:"new"`
	Allowed bool   `json:"allowed"` // the policy allows this ref
}

// fit returns p with its strings cut and as many refs as fit in budget bytes of JSON,
// the refused ones first; RefsTotal counts them all when some are left out.
func (p Push) fit(budget int) *Push {
	out := &Push{RefsTotal: p.RefsTotal}
	out.Repo, _ = cutEncoded(p.Repo, min(maxRepoBytes, max(budget-64, 0)))
	refs := slices.Clone(p.Refs)
	slices.SortStableFunc(refs, func(a, b RefUpdate) int {
		switch {
		case a.Allowed == b.Allowed:
			return 0
		case !a.Allowed:
			return -1
		}
		return 1
	})
	for _, r := range refs {
		r.Ref, _ = cutEncoded(r.Ref, maxRuleBytes)
		r.Old, _ = cutEncoded(r.Old, maxIDBytes)
		r.New, _ = cutEncoded(r.New, maxIDBytes)
		next := *out
		next.Refs = append(slices.Clip(out.Refs), r)
		if next.RefsTotal == 0 && len(next.Refs) < len(refs) {
			next.RefsTotal = len(refs)
		}
		if len(encode(next)) > budget {
			break
		}
		*out = next
	}
	if len(out.Refs) < len(refs) && out.RefsTotal == 0 {
		out.RefsTotal = len(refs)
	}
	return out
}

// kind is r's Kind, KindRequest for a record written before kinds.
func (r Record) kind() string {
	if r.Kind == "" {
		return KindRequest
	}
	return r.Kind
}

// bound cuts r's strings to their bounds.
func (r *Record) bound() {
	if p, cut := cutEncoded(r.Path, MaxPathBytes); cut {
		if r.PathBytes == 0 {
			r.PathBytes = len(r.Path)
		}
		r.Path = p
	}
	for _, f := range []struct {
		s   *string
		max int
	}{
		{&r.Kind, maxShortBytes}, {&r.Session, maxShortBytes}, {&r.Method, maxShortBytes}, {&r.Special, maxShortBytes},
		{&r.Host, maxHostBytes}, {&r.Decision, maxShortBytes}, {&r.Rule, maxRuleBytes}, {&r.Credential, maxRuleBytes},
		{&r.Reason, maxReasonBytes}, {&r.Error, maxReasonBytes},
	} {
		*f.s, _ = cutEncoded(*f.s, f.max)
	}
	if p := r.Push; p != nil {
		// The push gets what the rest of the line leaves of MaxRecordBytes.
		r.Push = nil
		rest := encode(r)
		r.Push = p.fit(MaxRecordBytes - len(rest) - len(`,"push":`))
	}
}

// encode is v as a line of the log holds it: encoding/json's text with the characters
// a terminal acts on that encoding/json leaves as they are (C1 controls, bidi
// overrides and isolates, zero-width characters) written as \uXXXX escapes
// (termsafe.JSON), so that the file shows escapes in a pager or on a terminal and a
// consumer reads the same values.
func encode(v any) []byte {
	b, _ := json.Marshal(v) // a Record always marshals
	return termsafe.JSON(b)
}

// cutEncoded returns the longest prefix of s, on a character boundary, whose encoding
// (encode) takes at most max bytes, and whether it had to cut. Costs are counted as
// encode writes them: 6 bytes for an escaped control character or an invalid byte, 6
// for another character that is not printable (12 above U+FFFF: a surrogate pair), 2
// for '"' and '\\'.
func cutEncoded(s string, max int) (string, bool) {
	cost := 0
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		c := size
		switch {
		case r == utf8.RuneError && size == 1, r < 0x20, r == '<', r == '>', r == '&', r == '\u2028', r == '\u2029':
			c = 6
		case r == '"', r == '\\':
			c = 2
		case r >= utf8.RuneSelf && !unicode.IsPrint(r) && r > 0xFFFF:
			c = 12
		case r >= utf8.RuneSelf && !unicode.IsPrint(r):
			c = 6
		}
		if cost+c > max {
			return s[:i], true
		}
		cost += c
		i += size
	}
	return s, false
}

// AllowEntry is the narrowest allow entry of the egress grammar that names host:port:
// host:port (an IPv6 address in brackets), or the host alone, every port, for port 0.
// A bare host opens every port, so the port is kept for 80 and 443 too: a pasted
// entry opens what was asked and no more. It is never a wildcard; for a name, it
// names the private addresses the name resolves to, never one ByAddressOnly reports.
func AllowEntry(host string, port int) string {
	host = normalize(host)
	if port == 0 {
		return host
	}
	if isIPv6(host) {
		return "[" + host + "]:" + strconv.Itoa(port)
	}
	return host + ":" + strconv.Itoa(port)
}
