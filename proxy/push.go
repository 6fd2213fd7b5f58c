package proxy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/devsandbox/devsandbox/egress"
	"github.com/devsandbox/devsandbox/proxy/audit"
	"github.com/devsandbox/devsandbox/proxy/gitpush"
)

// DefaultMaxPushHead bounds the command list of a git push that the proxy reads
// before deciding (Config.MaxPushHead): 1 MiB holds about 10,000 ref updates.
const DefaultMaxPushHead = 1 << 20

// maxPushDrain bounds how much of a refused push's body the proxy reads, and
// discards, before answering: git reports the answer only once it has sent its
// request, and the pack it sends never leaves the proxy.
const maxPushDrain = 1 << 30

// WithGitPush returns a copy of p that limits git pushes to the refs patterns name
// (egress.ParseRefPattern's: "agent/*" is refs/heads/agent/*, "refs/…" as written);
// p is unchanged. With at least one pattern, every smart-HTTP push the proxy sees
// (plain HTTP, and HTTPS it decrypts) must change only refs a pattern matches, or it
// is refused whole before any byte of it reaches the server; and, unless ssh is
// true, CONNECTs to port 22 are refused, since a push over ssh cannot be read. No
// patterns: no push policy.
func (p *Policy) WithGitPush(patterns []egress.RefPattern, ssh bool) *Policy {
	q := *p
	q.gitPush = slices.Clone(patterns)
	q.gitSSH = ssh
	return &q
}

// refusesSSH reports whether a CONNECT to port is git over ssh the push policy refuses.
func (p *Policy) refusesSSH(port int) bool {
	return port == 22 && len(p.gitPush) > 0 && !p.gitSSH
}

// allowsRef reports whether the push policy allows a push to change ref.
func (p *Policy) allowsRef(ref string) bool {
	for _, rp := range p.gitPush {
		if rp.Match(ref) {
			return true
		}
	}
	return false
}

func (p *Policy) gitPushText() string {
	s := make([]string, len(p.gitPush))
	for i, rp := range p.gitPush {
		s[i] = rp.String()
	}
	return strings.Join(s, ", ")
}

// pushKind is what classifyPush makes of a request.
type pushKind int

const (
	notPush     pushKind = iota
	receivePack          // a POST to …/git-receive-pack: read and judged
	oddPush              // names receive-pack otherwise: refused unread
)

// classifyPush tells a git push from other requests. A request whose path, raw path or
// content type names git-receive-pack is a push; it is judged only in the one form git
// sends (POST, a clean path ending in /git-receive-pack, no escapes, no ';'), and in
// any other refused unread, since a server may still route it to receive-pack. The
// ref advertisement (GET …/info/refs?service=git-receive-pack) is not a push.
func classifyPush(r *http.Request) pushKind {
	p := r.URL.Path
	names := func(s string) bool { return strings.Contains(strings.ToLower(s), "receive-pack") }
	if !names(p) && !names(r.URL.RawPath) && !names(r.Header.Get("Content-Type")) {
		return notPush
	}
	if r.Method == http.MethodPost && r.URL.RawPath == "" && strings.HasSuffix(p, "/git-receive-pack") &&
		path.Clean(p) == p && !strings.Contains(p, ";") && strings.Count(strings.ToLower(p), "receive-pack") == 1 {
		return receivePack
	}
	return oddPush
}

// screenPush applies the push policy to r, a request to ex's destination that passed
// screen. It returns nil when r goes on: not a push, or a push the policy allows,
// whose body then replays the command list read, then streams the rest unchanged.
// Otherwise it returns the answer that refuses r, having read (and discarded) the rest
// of its body and recorded the decision; nothing of r was sent.
func (s *Server) screenPush(r *http.Request, ex *exchange) *http.Response {
	pol := s.cfg.Policy
	if len(pol.gitPush) == 0 {
		return nil
	}
	switch classifyPush(r) {
	case notPush:
		return nil
	case oddPush:
		return s.refusePush(r, ex, nil, nil, http.StatusForbidden, fmt.Sprintf(
			"%s %s names git-receive-pack but is not a POST to a clean …/git-receive-pack path, the only push the proxy reads", r.Method, r.URL.Path))
	}
	if ce := r.Header.Get("Content-Encoding"); ce != "" && !strings.EqualFold(ce, "identity") {
		return s.refusePush(r, ex, nil, nil, http.StatusUnsupportedMediaType, fmt.Sprintf(
			"a push whose body is encoded (Content-Encoding: %s), which the proxy does not read", ce))
	}
	req, head, err := gitpush.ReadRequest(r.Body, s.cfg.MaxPushHead)
	if err != nil {
		code := http.StatusBadRequest
		if errors.Is(err, gitpush.ErrTooLarge) || errors.Is(err, gitpush.ErrUnsupported) {
			code = http.StatusForbidden
		}
		return s.refusePush(r, ex, req, nil, code, "the push could not be checked: "+err.Error())
	}
	if len(req.Commands) == 0 {
		// git's probe before a large push: no ref changes.
		r.Body = replay(head, r.Body)
		return nil
	}
	var refused []gitpush.Command
	for _, c := range req.Commands {
		if !pol.allowsRef(c.Ref) {
			refused = append(refused, c)
		}
	}
	if len(refused) == 0 {
		s.recordPush(r, ex, req, audit.DecisionAllow, "")
		r.Body = replay(head, r.Body)
		return nil
	}
	reason := fmt.Sprintf("%s is outside proxy.git_push (allowed: %s)", refused[0].Ref, pol.gitPushText())
	if len(refused) > 1 {
		reason = fmt.Sprintf("%s and %d more refs are outside proxy.git_push (allowed: %s)", refused[0].Ref, len(refused)-1, pol.gitPushText())
	}
	return s.refusePush(r, ex, req, refused, http.StatusForbidden, reason)
}

// refusePush records the refusal of r (req: what was read of it; refused: the refs
// outside the policy, nil when the push could not be judged) and returns the answer:
// a receive-pack result git prints, or an HTTP error of code with reason when the
// client asked for nothing git would print.
func (s *Server) refusePush(r *http.Request, ex *exchange, req *gitpush.Request, refused []gitpush.Command, code int, reason string) *http.Response {
	ex.deny(audit.RuleGitPush, reason)
	ex.local.Store(true)
	if req == nil {
		req = &gitpush.Request{}
	}
	s.recordPush(r, ex, req, audit.DecisionDeny, reason)
	if r.Body != nil {
		_, _ = io.CopyN(io.Discard, r.Body, maxPushDrain)
	}
	var body []byte
	ok := false
	if refused != nil {
		allowed := s.cfg.Policy.gitPushText()
		var msgs []string
		for _, c := range refused {
			verb := "push to"
			if c.Delete() {
				verb = "deleting"
			}
			msgs = append(msgs, fmt.Sprintf("devsandbox: %s %s refused by proxy.git_push (allowed: %s)", verb, c.Ref, allowed))
		}
		if len(refused) < len(req.Commands) {
			msgs = append(msgs, "devsandbox: nothing was pushed: a push with any ref outside proxy.git_push is refused whole")
		}
		body, ok = gitpush.Refusal(req, msgs, func(c gitpush.Command) string {
			if s.cfg.Policy.allowsRef(c.Ref) {
				return "not pushed: another ref of this push is outside proxy.git_push"
			}
			return "refused by devsandbox proxy.git_push"
		})
	} else {
		body, ok = gitpush.Fatal(req, "devsandbox: push refused: "+reason)
	}
	if !ok {
		ex.setStatus(code)
		return textResponse(r, code, "devsandbox proxy: push refused: "+reason+".\n")
	}
	resp := textResponse(r, http.StatusOK, "")
	resp.Header.Set("Content-Type", gitpush.ResultContentType)
	resp.Header.Set("Cache-Control", "no-cache")
	resp.Body, resp.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	return resp
}

// recordPush writes the KindPush record of a push decision.
func (s *Server) recordPush(r *http.Request, ex *exchange, req *gitpush.Request, decision, reason string) {
	push := &audit.Push{Repo: repoURL(ex, r.URL.Path)}
	for _, c := range req.Commands {
		push.Refs = append(push.Refs, audit.RefUpdate{Ref: c.Ref, Old: c.Old, New: c.New, Allowed: s.cfg.Policy.allowsRef(c.Ref)})
	}
	rec := audit.Record{Kind: audit.KindPush, Time: s.cfg.Now().UTC(), Session: s.cfg.Session, Method: r.Method,
		Host: ex.host, Port: ex.port, Decision: decision, Reason: reason, MITM: ex.mitm, Push: push}
	if decision != audit.DecisionAllow {
		rec.Rule = audit.RuleGitPush
	}
	s.writeRecord(rec)
}

// repoURL is the repository a push goes to: scheme, host, a port other than the
// scheme's, and the path without /git-receive-pack.
func repoURL(ex *exchange, p string) string {
	host := ex.host
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if !(ex.scheme == "https" && ex.port == 443 || ex.scheme == "http" && ex.port == 80) {
		host += ":" + strconv.Itoa(ex.port)
	}
	return ex.scheme + "://" + host + strings.TrimSuffix(p, "/git-receive-pack")
}

// replay is a request body that reads head, then the rest of body.
func replay(head []byte, body io.ReadCloser) io.ReadCloser {
	return struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(head), body), body}
}
