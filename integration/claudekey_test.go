//go:build integration

package integration

import (
	"os"
	"strings"
	"testing"
)

// claudeKey is the name Claude Code gives a directory's folder in projects/: every
// character but ASCII letters and digits becomes "-".
func claudeKey(dir string) string {
	return strings.Map(func(r rune) rune {
		if r < 128 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return r
		}
		return '-'
	}, dir)
}

// Two projects whose Claude Code keys collide (a-b, a.b) share one folder on the host.
// The sandbox of one must neither read the other's session and memory nor plant a
// session or memory that the host's Claude Code would load for the other; the folder
// of a directory since deleted, whose sessions remain, is not shared either, nor one
// holding a session that records no directory. Each case is reported, naming the
// folder and the other directory or the session.
func TestClaudeSessionKeyCollision(t *testing.T) {
	forEachIsolator(t, func(t *testing.T, iso string) {
		p := newProject(t)
		mine, other := p.newRepo("a-b"), p.newRepo("a.b")
		t.Cleanup(func() { p.forget(mine) })
		key := claudeKey(mine)
		if claudeKey(other) != key {
			t.Fatalf("keys differ: %s, %s", key, claudeKey(other))
		}
		folder := "claude/projects/" + key
		p.write(folder+"/other.jsonl", `{"type":"user","cwd":"`+other+`","sessionId":"other","message":"OTHER-SESSION-SECRET"}`+"\n")
		p.write(folder+"/memory/MEMORY.md", "OTHER-MEMORY\n")
		env := []string{"CLAUDE_CONFIG_DIR=" + p.path("claude")}
		script := `d="$CLAUDE_CONFIG_DIR/projects/` + key + `"
			cat "$d"/*.jsonl "$d/memory/MEMORY.md" 2>/dev/null
			mkdir -p "$d/memory" && echo PLANTED-MEMORY >> "$d/memory/MEMORY.md" &&
			printf '{"type":"user","cwd":"%s","message":"PLANTED"}\n' "` + other + `" > "$d/planted.jsonl" && echo wrote-own-copy`
		for _, c := range []struct{ what, warning string }{
			{"another directory has the key", p.path(folder) + " is also the folder of " + other},
			{"sessions of a deleted directory remain", p.path(folder) + " holds sessions of " + other},
			{"a session records no directory", "could not tell where the session " + p.path(folder) + "/other.jsonl ran: it holds a conversation that records no directory"},
		} {
			switch c.what {
			case "sessions of a deleted directory remain":
				if err := os.RemoveAll(other); err != nil {
					t.Fatal(err)
				}
			case "a session records no directory": // it was counted as the project's
				p.write(folder+"/other.jsonl", `{"type":"user","sessionId":"other","message":"OTHER-SESSION-SECRET"}`+"\n")
			}
			before := treeOf(t, p.path("claude/projects"))
			r := run(t, mine, env, "", "--isolator="+iso, "--", "/bin/sh", "-c", script)
			if r.code != 0 || !strings.Contains(r.stdout, "wrote-own-copy") {
				t.Fatalf("%s: run:\n%s", c.what, r)
			}
			if strings.Contains(r.stdout, "OTHER-") {
				t.Errorf("%s: the sandbox read the other directory's session or memory:\n%s", c.what, r.stdout)
			}
			if diff := diffTrees(before, treeOf(t, p.path("claude/projects"))); len(diff) > 0 {
				t.Errorf("%s: the sandbox changed the host's shared folder:\n\t%s", c.what, strings.Join(diff, "\n\t"))
			}
			if !strings.Contains(r.stderr, c.warning) {
				t.Errorf("%s: no warning %q:\n%s", c.what, c.warning, r.stderr)
			}
		}
	})
}

// Without a collision this project's folder is shared: a session the host recorded is
// read (and continued) in the sandbox, and one the sandbox starts is the host's to
// resume; sessions written in the sandbox record the project as where they ran, so
// the next run shares the folder again, silently.
func TestClaudeSessionsSharedWithHost(t *testing.T) {
	forEachIsolator(t, func(t *testing.T, iso string) {
		p := newProject(t)
		folder := "claude/projects/" + claudeKey(p.dir)
		p.write(folder+"/s1.jsonl", `{"type":"user","cwd":"`+p.dir+`","sessionId":"s1","message":"HOST-TURN"}`+"\n")
		env := []string{"CLAUDE_CONFIG_DIR=" + p.path("claude")}
		script := `d="$CLAUDE_CONFIG_DIR/projects/` + claudeKey(p.dir) + `"
			cat "$d/s1.jsonl"
			printf '{"type":"assistant","cwd":"%s","sessionId":"s1","message":"SANDBOX-TURN"}\n' "$PWD" >> "$d/s1.jsonl"
			printf '{"type":"user","cwd":"%s","sessionId":"s2","message":"SANDBOX-SESSION"}\n' "$PWD" > "$d/s2.jsonl"`
		r := run(t, p.dir, env, "", "--isolator="+iso, "--", "/bin/sh", "-c", script)
		if r.code != 0 || !strings.Contains(r.stdout, "HOST-TURN") || strings.Contains(r.stderr, "lossy") {
			t.Fatalf("the host's session was not shared with the sandbox:\n%s", r)
		}
		if b, _ := os.ReadFile(p.path(folder + "/s1.jsonl")); !strings.Contains(string(b), "SANDBOX-TURN") {
			t.Errorf("the sandbox's turn did not reach the host's session: %q", b)
		}
		if b, _ := os.ReadFile(p.path(folder + "/s2.jsonl")); !strings.Contains(string(b), "SANDBOX-SESSION") {
			t.Errorf("the sandbox's session did not reach the host: %q", b)
		}
		// The host resumes s2; the next run still shares the folder.
		p.write(folder+"/s2.jsonl", `{"type":"user","cwd":"`+p.dir+`","sessionId":"s2","message":"HOST-RESUMED"}`+"\n")
		r = run(t, p.dir, env, "", "--isolator="+iso, "--", "/bin/sh", "-c", `cat "$CLAUDE_CONFIG_DIR/projects/`+claudeKey(p.dir)+`/s2.jsonl"`)
		if r.code != 0 || !strings.Contains(r.stdout, "HOST-RESUMED") || strings.Contains(r.stderr, "lossy") {
			t.Fatalf("second run:\n%s", r)
		}
	})
}

// The host's Claude Code loads projects/<key>/memory/MEMORY.md into every
// conversation as the user's own auto-memory: out of the project (no git diff shows
// it), so unlike CLAUDE.md nobody reviews it. With the session folder shared, the
// memory folder in it is the sandbox's own: the sandbox neither changes the host's
// memory (appending, adding a file, or renaming the folder away and planting one) nor
// reads it, and keeps what it writes there from one run to the next.
func TestClaudeMemoryNotShared(t *testing.T) {
	forEachIsolator(t, func(t *testing.T, iso string) {
		p := newProject(t)
		folder := "claude/projects/" + claudeKey(p.dir)
		p.write(folder+"/s1.jsonl", `{"type":"user","cwd":"`+p.dir+`","sessionId":"s1","message":"HOST-TURN"}`+"\n")
		p.write(folder+"/memory/MEMORY.md", "HOST-MEMORY\n")
		env := []string{"CLAUDE_CONFIG_DIR=" + p.path("claude")}
		script := `d="$CLAUDE_CONFIG_DIR/projects/` + claudeKey(p.dir) + `"
			cat "$d/s1.jsonl" "$d/memory/MEMORY.md" 2>/dev/null
			echo PLANTED-MEMORY >> "$d/memory/MEMORY.md"
			echo PLANTED-TOPIC > "$d/memory/topic.md"
			mv "$d/memory" "$d/m" 2>/dev/null && mkdir "$d/memory" && echo PLANTED-BY-RENAME > "$d/memory/MEMORY.md"
			cat "$d/memory/MEMORY.md"`
		r := run(t, p.dir, env, "", "--isolator="+iso, "--", "/bin/sh", "-c", script)
		if r.code != 0 || !strings.Contains(r.stdout, "HOST-TURN") {
			t.Fatalf("the session folder was not shared:\n%s", r)
		}
		if strings.Contains(r.stdout, "HOST-MEMORY") {
			t.Errorf("the sandbox read the host's memory:\n%s", r.stdout)
		}
		if !strings.Contains(r.stdout, "PLANTED-MEMORY") {
			t.Errorf("the sandbox could not write its own memory:\n%s", r)
		}
		if b, err := os.ReadFile(p.path(folder + "/memory/MEMORY.md")); err != nil || string(b) != "HOST-MEMORY\n" {
			t.Errorf("the host's MEMORY.md: %q, %v", b, err)
		}
		for _, f := range []string{"/memory/topic.md", "/m"} {
			if _, err := os.Lstat(p.path(folder + f)); err == nil {
				t.Errorf("the sandbox created %s in the host's session folder", f)
			}
		}
		r = run(t, p.dir, env, "", "--isolator="+iso, "--", "/bin/sh", "-c", `cat "$CLAUDE_CONFIG_DIR/projects/`+claudeKey(p.dir)+`/memory/topic.md"`)
		if r.code != 0 || !strings.Contains(r.stdout, "PLANTED-TOPIC") {
			t.Errorf("the sandbox's memory did not persist to the next run:\n%s", r)
		}
	})
}
