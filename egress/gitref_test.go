package egress

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestParseRefPattern(t *testing.T) {
	for in, want := range map[string]string{
		"agent/*":          "refs/heads/agent/*",
		"main":             "refs/heads/main",
		"*":                "refs/heads/*",
		"refs/tags/v*":     "refs/tags/v*",
		"refs/for/main":    "refs/for/main",
		"feature/*/draft":  "refs/heads/feature/*/draft",
		"refs/heads/ü/*":   "refs/heads/ü/*",
		"agent-*":          "refs/heads/agent-*",
		"refs/notes/agent": "refs/notes/agent",
	} {
		p, err := ParseRefPattern(in)
		if err != nil || p.String() != want {
			t.Errorf("ParseRefPattern(%q) = %q, %v; want %q", in, p.String(), err, want)
		}
	}
	for _, bad := range []string{
		"", "refs/", "/main", "main/", "a//b", "a/../b", "a..b", ".hidden", "a/.x", "x.lock", "a b", "a~1", "a^", "a:b",
		"a?", "a[b", `a\b`, "a@{1}", "a.", "a\x01", "a\x7f", strings.Repeat("a", MaxRefBytes),
	} {
		if p, err := ParseRefPattern(bad); err == nil {
			t.Errorf("ParseRefPattern(%q) = %q, want an error", bad, p)
		}
	}
}

func TestRefPatternMatch(t *testing.T) {
	for _, tt := range []struct {
		pattern, ref string
		want         bool
	}{
		{"agent/*", "refs/heads/agent/x", true},
		{"agent/*", "refs/heads/agent/x/y", true},
		{"agent/*", "refs/heads/agent", false},
		{"agent/*", "refs/heads/agentx", false},
		{"agent/*", "refs/heads/Agent/x", false},
		{"agent/*", "refs/tags/agent/x", false},
		{"agent/*", "refs/heads/main", false},
		{"main", "refs/heads/main", true},
		{"main", "refs/heads/main2", false},
		{"main", "refs/heads/mai", false},
		{"*", "refs/heads/main", true},
		{"*", "refs/tags/v1", false},
		{"refs/tags/v*", "refs/tags/v1.2", true},
		{"refs/tags/v*", "refs/heads/v1", false},
		{"feature/*/draft", "refs/heads/feature/a/b/draft", true},
		{"feature/*/draft", "refs/heads/feature/a/draft/x", false},
		{"a*b*c", "refs/heads/aXbYbZc", true},
		{"a*b*c", "refs/heads/aXbYbZcd", false},
		{"a*a*a*a*b", "refs/heads/" + strings.Repeat("a", 200), false},
	} {
		p, err := ParseRefPattern(tt.pattern)
		if err != nil {
			t.Fatal(err)
		}
		if got := p.Match(tt.ref); got != tt.want {
			t.Errorf("%q matches %q: %v, want %v", tt.pattern, tt.ref, got, tt.want)
		}
	}
}

func TestCheckRefName(t *testing.T) {
	for _, ok := range []string{"refs/heads/main", "refs/heads/agent/x-1_2.3", "refs/tags/v1.0", "refs/heads/ü", "refs/x"} {
		if err := CheckRefName(ok); err != nil {
			t.Errorf("CheckRefName(%q): %v", ok, err)
		}
	}
	for _, bad := range []string{"main", "HEAD", "refs/", "refs", "refs/heads/", "refs/heads//x", "refs/heads/../x", "refs/heads/.x",
		"refs/heads/x.lock", "refs/heads/x.lock/y", "refs/heads/a b", "refs/heads/a*", "refs/heads/x.", "refs/heads/a@{0}", "refs/heads/a\n",
		"refs/heads/a\x00b", "/refs/heads/x"} {
		if err := CheckRefName(bad); err == nil {
			t.Errorf("CheckRefName(%q) accepted", bad)
		}
	}
}

// A pattern crosses a pipe (JSON) and comes back the same.
func TestRefPatternText(t *testing.T) {
	in := []string{"agent/*", "refs/tags/v*"}
	var ps []RefPattern
	for _, s := range in {
		p, err := ParseRefPattern(s)
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, p)
	}
	b, err := json.Marshal(ps)
	if err != nil || string(b) != `["refs/heads/agent/*","refs/tags/v*"]` {
		t.Fatalf("json.Marshal = %s, %v", b, err)
	}
	var back []RefPattern
	if err := json.Unmarshal(b, &back); err != nil || len(back) != 2 || back[0] != ps[0] || back[1] != ps[1] {
		t.Errorf("json.Unmarshal = %v, %v", back, err)
	}
	if err := json.Unmarshal([]byte(`["refs/heads/a..b"]`), &back); err == nil {
		t.Error("a bad pattern was read")
	}
}
