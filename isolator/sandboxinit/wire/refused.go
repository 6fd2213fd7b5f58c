package wire

import (
	"encoding/json"
	"strings"
)

// Refusal is a connection to a kept container's proxy endpoint that its keeper
// refused (503) because it could not tell which session's proxy it was for: it
// reached no proxy, so the keeper tells the inits of the sessions it may have been,
// and each reports it on its stderr (RefusedMarker) for the host to write to that
// session's audit log. Method, Host, Port and Path are what the client's request
// line said (never the query); Reason is why the keeper refused it.
type Refusal struct {
	Method string `json:"method,omitempty"`
	Host   string `json:"host,omitempty"`
	Port   int    `json:"port,omitempty"`
	Path   string `json:"path,omitempty"`
	Reason string `json:"reason"`
}

// MaxRefusalBytes bounds a refusal's JSON (a marker the Report holds back while it
// is incomplete, and a line on the keeper's connection): with the marker around it,
// under the 4 KiB a pipe writes whole (PIPE_BUF), so that the command, which shares the
// init's stderr, cannot split the init's report with writes of its own.
const MaxRefusalBytes = 3584

// refusedPrefix begins the refusal marker with nonce; the Refusal's JSON (which holds
// no control character: JSON escapes them) and MarkerEnd follow.
func refusedPrefix(nonce string) string { return markerStart + "refused:" + nonce + ":" }

// RefusedMarker is what a kept session's init writes on stderr, after ReadyMarker,
// for a connection the keeper refused (Refusal) that may have been its session's;
// nonce is the session's (Hello.Nonce), which the command cannot read, so it cannot
// forge one. "" when the refusal does not fit.
func RefusedMarker(nonce string, r Refusal) string {
	b, err := EncodeRefusal(r)
	if err != nil {
		return ""
	}
	return refusedPrefix(nonce) + string(b) + MarkerEnd
}

// EncodeRefusal is r as one line of JSON (no newline), its strings cut to fit
// MaxRefusalBytes (the path, then the reason, shortened until it fits: JSON may
// write a byte as six).
func EncodeRefusal(r Refusal) ([]byte, error) {
	r.Method, r.Host, r.Path, r.Reason = cut(r.Method, 64), cut(r.Host, 255), cut(r.Path, 1024), cut(r.Reason, 512)
	for {
		b, err := json.Marshal(r)
		if err != nil || len(b) <= MaxRefusalBytes {
			return b, err
		}
		switch {
		case r.Path != "":
			r.Path = cut(r.Path, len(r.Path)/2)
		case r.Reason != "":
			r.Reason = cut(r.Reason, len(r.Reason)/2)
		default:
			r.Host, r.Method = cut(r.Host, len(r.Host)/2), cut(r.Method, len(r.Method)/2)
		}
	}
}

// ParseRefusal reads a Refusal's JSON (a line from the keeper, or a marker's payload).
func ParseRefusal(b []byte) (Refusal, bool) {
	var r Refusal
	if len(b) > MaxRefusalBytes || json.Unmarshal(b, &r) != nil || r.Reason == "" {
		return Refusal{}, false
	}
	return r, true
}

// cut is s cut to at most n bytes, without a broken rune at its end.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "")
}
