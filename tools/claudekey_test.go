package tools

import (
	"errors"
	"fmt"
	"path"
	"strings"
	"testing"
)

func TestClaudeKey(t *testing.T) {
	for _, d := range []string{"/src/a-b", "/src/a.b", "/src/a/b", "/src/a b", "/src/a_b"} {
		if got := claudeKey(d); got != "-src-a-b" {
			t.Errorf("claudeKey(%q) = %q, want -src-a-b", d, got)
		}
	}
	if got := claudeKey("/src/\u00e9"); got != "-src--" {
		t.Errorf("a non-ASCII character is one '-': %q", got)
	}
}

// claudeHost is a host with the given directories (and their parents), Claude Code's
// directory at /c, and session files (name: content) in the folder of /src/a-b.
func claudeHost(dirs []string, sessions map[string]string) Host {
	fs := files("/c", "/c/projects")
	for _, d := range dirs {
		for p := d; p != "/"; p = path.Dir(p) {
			fs[p] = ""
		}
	}
	folder := "/c/projects/" + claudeKey("/src/a-b")
	if sessions != nil {
		fs[folder] = ""
	}
	for n, c := range sessions {
		fs[folder+"/"+n] = c
	}
	h := fakeHost(fs)
	h.Env["CLAUDE_CONFIG_DIR"] = "/c"
	h.Project = "/src/a-b"
	h.ReadHead = func(p string, n int) ([]byte, error) {
		c, ok := fs[p]
		if !ok || c == "FIFO" {
			return nil, errors.New("not a regular file")
		}
		return []byte(c)[:min(n, len(c))], nil
	}
	return h
}

// summaries returns summary records, about n bytes of them.
func summaries(n int) string {
	var b strings.Builder
	for b.Len() < n {
		b.WriteString(`{"type":"summary","summary":"a session","leafUuid":"u"}` + "\n")
	}
	return b.String()
}

func session(cwd, msg string) string {
	return fmt.Sprintf(`{"type":"summary","summary":"x"}`+"\n"+`{"type":"user","cwd":%q,"message":%q}`+"\n", cwd, msg)
}

// The project's sessions folder is shared unless another directory has its key, a
// session there ran elsewhere, or that cannot be told.
func TestClaudeSessionsShared(t *testing.T) {
	c := place{src: "/c"}
	tests := []struct {
		name     string
		dirs     []string
		sessions map[string]string
		links    map[string]string
		ok       bool
		why      string
	}{
		{"no folder yet", []string{"/src/a-b"}, nil, nil, true, ""},
		{"own sessions", []string{"/src/a-b", "/src/ab", "/src/a-bc"}, map[string]string{"s.jsonl": session("/src/a-b", "hi"), "memory": ""}, nil, true, ""},
		{"own session recorded through a link", []string{"/src/a-b", "/l"}, map[string]string{"s.jsonl": session("/l/a-b", "hi")},
			map[string]string{"/l/a-b": "/src/a-b"}, true, ""},
		{"summaries only, an empty file", []string{"/src/a-b"}, map[string]string{"s.jsonl": `{"type":"summary","summary":"x","leafUuid":"u"}` + "\n", "e.jsonl": ""}, nil, true, ""},
		{"own session, its cwd past 64 KiB", []string{"/src/a-b"}, map[string]string{"s.jsonl": summaries(70<<10) + session("/src/a-b", "hi")}, nil, true, ""},
		{"a FIFO", []string{"/src/a-b"}, map[string]string{"f.jsonl": "FIFO"}, nil,
			false, "could not tell where the session /c/projects/-src-a-b/f.jsonl ran: it cannot be read as a regular file (not a regular file)"},
		{"a conversation without cwd", []string{"/src/a-b"}, map[string]string{"s.jsonl": `{"type":"user","message":{"content":"secret"}}` + "\n"}, nil,
			false, "could not tell where the session /c/projects/-src-a-b/s.jsonl ran: it holds a conversation that records no directory"},
		{"no cwd in the first 256 KiB", []string{"/src/a-b"}, map[string]string{"s.jsonl": summaries(300<<10) + session("/src/a-b", "hi")}, nil,
			false, "could not tell where the session /c/projects/-src-a-b/s.jsonl ran: it records no directory in its first 256 KiB"},
		{"not JSON lines", []string{"/src/a-b"}, map[string]string{"s.jsonl": `{"type":"summary"` + "\n" + session("/src/a.b", "secret")}, nil,
			false, "could not tell where the session /c/projects/-src-a-b/s.jsonl ran: it is not JSON lines (invalid character '{' after object key:value pair)"},
		{"not a record", []string{"/src/a-b"}, map[string]string{"s.jsonl": `["cwd","/src/a-b"]`}, nil,
			false, "could not tell where the session /c/projects/-src-a-b/s.jsonl ran: it holds [ where a record belongs"},
		{"a twin's cwd past 64 KiB", []string{"/src/a-b"}, map[string]string{"o.jsonl": summaries(70<<10) + session("/src/a.b", "secret")}, nil,
			false, "/c/projects/-src-a-b holds sessions of /src/a.b (o.jsonl)"},
		{"a twin's cwd after a long message", []string{"/src/a-b"}, map[string]string{"o.jsonl": `{"message":"` + strings.Repeat("x", 100<<10) + `","cwd":"/src/a.b"}`}, nil,
			false, "/c/projects/-src-a-b holds sessions of /src/a.b (o.jsonl)"},
		{"twin a.b", []string{"/src/a-b", "/src/a.b"}, nil, nil, false, "/c/projects/-src-a-b is also the folder of /src/a.b"},
		{"twin a/b", []string{"/src/a-b", "/src/a/b"}, nil, nil, false, "/c/projects/-src-a-b is also the folder of /src/a/b"},
		{"twin .src/a-b is not one", []string{"/src/a-b", "/.src/a-b"}, nil, nil, true, ""},
		{"session of a deleted twin", []string{"/src/a-b"}, map[string]string{"o.jsonl": session("/src/a.b", "secret")}, nil,
			false, "/c/projects/-src-a-b holds sessions of /src/a.b (o.jsonl)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := withLinks(claudeHost(tt.dirs, tt.sessions), tt.links)
			ok, why, _ := h.claudeSessions(c, claudeKey(h.Project))
			if ok != tt.ok || why != tt.why {
				t.Errorf("claudeSessions = %v, %q; want %v, %q", ok, why, tt.ok, tt.why)
			}
			shared := false
			for _, s := range claudeState(h) {
				shared = shared || s.Path == "projects/"+claudeKey(h.Project) && s.Shared
			}
			if shared != tt.ok {
				t.Errorf("claudeState shares the folder: %v, want %v", shared, tt.ok)
			}
			warns := Claude().Warnings(h)
			if tt.ok && warns != nil || !tt.ok && (len(warns) != 1 || !strings.HasPrefix(warns[0], tt.why+": ")) {
				t.Errorf("warnings %q", warns)
			}
		})
	}
}

// Past the walk limit, the answer is "cannot tell": not shared.
func TestClaudeKeyTwinsLimit(t *testing.T) {
	h := claudeHost(nil, nil)
	h.Project = strings.Repeat("/x", claudeWalkLimit+1)
	h.ReadDir = func(string) ([]string, error) { return []string{"x"}, nil }
	if twins, complete := h.keyTwins(claudeKey(h.Project)); complete || twins != nil {
		t.Errorf("keyTwins = %q, %v; want nothing, incomplete", twins, complete)
	}
	if ok, why, _ := h.claudeSessions(place{src: "/c"}, claudeKey(h.Project)); ok || !strings.Contains(why, "could not tell") {
		t.Errorf("claudeSessions = %v, %q", ok, why)
	}
}

// The bytes read of all session files are bounded: past the budget, "cannot tell".
func TestClaudeSessionsBudget(t *testing.T) {
	sessions := map[string]string{}
	for i := range 4 {
		sessions[fmt.Sprintf("s%d.jsonl", i)] = summaries(20<<10) + session("/src/a-b", "hi")
	}
	h := claudeHost([]string{"/src/a-b"}, sessions)
	folder := "/c/projects/" + claudeKey(h.Project)
	// Each file takes reads of 4, 16 and 64 KiB, the last one short (about 20 KiB):
	// about 40 KiB of the budget, which must hold 64 KiB for the last read.
	if ok, why, _ := h.folderSessions(folder, 4*41<<10+64<<10); !ok {
		t.Errorf("within the budget: %q", why)
	}
	if ok, why, _ := h.folderSessions(folder, 100<<10); ok || why != "could not tell where the session "+folder+"/s1.jsonl ran: more than 64 MiB of session files to read" {
		t.Errorf("past the budget: %v, %q", ok, why)
	}
}

// With a Memo, a launch reads the session files once, for both Bindings and Warnings.
func TestClaudeSessionsMemo(t *testing.T) {
	h := claudeHost([]string{"/src/a-b"}, map[string]string{"s.jsonl": session("/src/a-b", "hi")})
	reads, read := 0, h.ReadHead
	h.ReadHead = func(p string, n int) ([]byte, error) {
		reads++
		return read(p, n)
	}
	h.Memo = NewMemo()
	Claude().Bindings(h)
	if w := Claude().Warnings(h); w != nil || reads != 1 {
		t.Errorf("warnings %q, %d reads; want none, 1", w, reads)
	}
}
