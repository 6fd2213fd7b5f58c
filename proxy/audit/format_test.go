package audit

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/devsandbox/devsandbox/internal/termsafe"
)

// formatRecords cover every shape FormatText and FormatJSON render, with what a
// sandbox can put in a path, a method or a host.
var formatRecords = []Record{
	{Kind: KindRequest, Time: time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC), Session: "s1", Method: "GET", Host: "api.test", Port: 443,
		Path: "/v1/x", Status: 200, BytesUp: 10, BytesDown: 2048, DurationMS: 12, Decision: DecisionAllow, Rule: "api.test", MITM: true, Credential: "Authorization"},
	{Kind: KindRequest, Time: time.Date(2025, 3, 4, 5, 6, 8, 0, time.UTC), Session: "s1", Method: "GET", Host: "10.0.0.5", Port: 9,
		Path: "/AAAA", PathBytes: 60001, Status: 403, Decision: DecisionDeny, Rule: RulePrivate, Reason: "10.0.0.5 is a private address", Special: ClassPrivate},
	{Kind: KindRequest, Time: time.Date(2025, 3, 4, 5, 6, 9, 0, time.UTC), Session: "s1", Method: "GET", Host: "evil.test", Port: 80,
		Path: "/evil\u202etxt.exe\u2066\u200b\x1b[31m\U000E0041", Status: 404, Decision: DecisionAllow, Rule: RuleDefault},
	{Kind: KindRequest, Time: time.Date(2025, 3, 4, 5, 6, 10, 0, time.UTC), Session: "s1", Method: "CONNECT", Host: "2001:db8::1", Port: 8443,
		Status: 502, Decision: DecisionAllow, Rule: RuleDefault, Error: "dialing [2001:db8::1]:8443: connection refused"},
	{Kind: KindDropped, Time: time.Date(2025, 3, 4, 5, 6, 11, 0, time.UTC), Session: "s1", Decision: DecisionDeny, Dropped: 500},
	{Time: time.Date(2025, 3, 4, 5, 6, 12, 0, time.UTC), Method: "G\u202eET", Host: "x\u2028y", Port: 80, Decision: DecisionDeny, Rule: "bad request",
		Reason: "the target\u200f is not a host name"}, // a legacy record (no kind)
	{Kind: KindPush, Time: time.Date(2025, 3, 4, 5, 6, 13, 0, time.UTC), Session: "s1", Method: "POST", Host: "git.test", Port: 443,
		Decision: DecisionDeny, Rule: RuleGitPush, Reason: "refs/heads/main is outside proxy.git_push (allowed: refs/heads/agent/*)",
		Push: &Push{Repo: "https://git.test/org/repo.git", RefsTotal: 3, Refs: []RefUpdate{
			{Ref: "refs/heads/main", Old: "1111111111111111111111111111111111111111", New: "2222222222222222222222222222222222222222"},
			{Ref: "refs/heads/agent/\u202ex", Old: "0000000000000000000000000000000000000000", New: "2222222222222222222222222222222222222222", Allowed: true}}}},
	{Kind: KindPush, Time: time.Date(2025, 3, 4, 5, 6, 14, 0, time.UTC), Session: "s1", Method: "POST", Host: "git.test", Port: 80,
		Decision: DecisionAllow, Push: &Push{Repo: "http://git.test/repo.git", Refs: []RefUpdate{
			{Ref: "refs/heads/agent/x", Old: "2222222222222222222222222222222222222222", New: "0000000000000000000000000000000000000000", Allowed: true}}}},
}

// unsafeRune reports a character that must never reach a terminal raw.
func unsafeRune(s string) (rune, bool) {
	for _, r := range s {
		if r != '\n' && !unicode.IsPrint(r) {
			return r, true
		}
	}
	return 0, false
}

func TestFormatText(t *testing.T) {
	var b bytes.Buffer
	for _, r := range formatRecords {
		b.WriteString(FormatText(r, time.UTC) + "\n")
	}
	if r, bad := unsafeRune(b.String()); bad {
		t.Errorf("text output holds %U raw", r)
	}
	golden(t, "text.golden", b.Bytes())
}

// TestFormatJSON: every character that is not printable is escaped, and the escaped
// line still reads back as the same record.
func TestFormatJSON(t *testing.T) {
	var b bytes.Buffer
	for _, r := range formatRecords {
		line := FormatJSON(r)
		b.Write(append(line, '\n'))
		var back Record
		if err := json.Unmarshal(line, &back); err != nil || !reflect.DeepEqual(back, r) {
			t.Errorf("%s reads back as %+v, %v", line, back, err)
		}
	}
	if r, bad := unsafeRune(b.String()); bad {
		t.Errorf("JSON output holds %U raw", r)
	}
	golden(t, "json.golden", b.Bytes())
}

func TestEscape(t *testing.T) {
	for in, want := range map[string]string{
		"plain/path": "plain/path", "héllo": "héllo", "a\u202eb": `"a\u202eb"`, "a\x1bb": `"a\x1bb"`, "\xff": `"\xff"`,
	} {
		if got := Escape(in); got != want {
			t.Errorf("Escape(%q) = %s, want %s", in, got, want)
		}
	}
	if got := string(termsafe.JSON([]byte(`"a` + "\U000E0041" + `b"`))); got != `"a\udb40\udc41b"` {
		t.Errorf("escapeJSON of a tag character: %s", got)
	}
	if s := strings.Repeat("é", 3); string(termsafe.JSON([]byte(s))) != s {
		t.Error("printable characters are changed")
	}
}
