//go:build integration

package integration

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The audit log's own integrity: what the sandbox sends cannot erase it, and nothing
// it sends reaches a terminal raw through devsandbox logs proxy.

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// auditLine is the part of an audit record these tests look at.
type auditLine struct {
	Kind, Session, Method, Host, Path, Decision, Rule string
	Port, Status, PathBytes, Dropped                  int
}

func parseAudit(t *testing.T, out string) []auditLine {
	t.Helper()
	var recs []auditLine
	for line := range strings.Lines(out) {
		var r struct {
			auditLine
			PathBytes int `json:"path_bytes"`
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("%v in %q", err, line)
		}
		r.auditLine.PathBytes = r.PathBytes
		recs = append(recs, r.auditLine)
	}
	return recs
}

// floodScript sends, on one keep-alive connection to the sandbox's proxy, one allowed
// request carrying marker, then n denied requests for a private address with a path
// of 60,000 bytes each.
func floodScript(allowed, denied, marker string, n int) string {
	return fmt.Sprintf(`import http.client, sys
c = http.client.HTTPConnection("127.0.0.1", 3128, timeout=30)
def get(url):
    c.request("GET", url)
    r = c.getresponse()
    r.read()
    return r.status
print("marker", get("http://%[1]s/%[3]s"))
long = "/" + "A" * 60000
codes = {}
for i in range(%[4]d):
    s = get("http://%[2]s" + long)
    codes[s] = codes.get(s, 0) + 1
print("flood", sorted(codes.items()))
`, allowed, denied, marker, n)
}

// TestAuditLogSurvivesFlood: one allowed request with a marker, then a flood of
// denied requests with huge paths on one keep-alive connection, cannot push the marker
// or an earlier session's records out of the audit log: denied records beyond the
// session's budget are counted in a marker, records are bounded, and a follower that
// ran through it all missed nothing.
func TestAuditLogSurvivesFlood(t *testing.T) {
	requireRoot(t)
	o := newOutside(t)
	forEachIsolator(t, func(t *testing.T, iso string) { testAuditLogSurvivesFlood(t, iso, o) })
}

func testAuditLogSurvivesFlood(t *testing.T, iso string, o *outside) {
	p := newProject(t)
	flags := []string{"--egress=proxy", "--allow", o.addr + ":8080"}
	early := "early-" + randHex(6)
	if out := p.mustSandbox(iso, flags, fmt.Sprintf(`curl -s -o /dev/null -w '%%{http_code}\n' -m 5 http://%s:8080/%s`, o.addr, early)); out != "404\n" {
		t.Fatalf("the earlier session's request: %q", out)
	}

	follow := command(t.Context(), p.dir, baseEnv(), "logs", "proxy", "--follow", "--json")
	fout, err := follow.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := follow.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = follow.Process.Kill(); _ = follow.Wait() }()
	followed := newLineReader(t, fout)
	followed.waitFor(`{`) // the earlier session's record: the follower is running

	const flood, budget = 1200, 1000 // budget: audit.DefaultDeniedBudget
	marker := "marker-" + randHex(6)
	p.write("proj/flood.py", floodScript(o.addr+":8080", o.addr+":9", marker, flood))
	out := p.mustSandbox(iso, flags, "python3 flood.py")
	if want := fmt.Sprintf("marker 404\nflood [(403, %d)]\n", flood); out != want {
		t.Fatalf("the flood inside: %q, want %q", out, want)
	}

	r := run(t, p.dir, nil, "", "logs", "proxy", "--json")
	if r.code != 0 {
		t.Fatalf("logs proxy:\n%s", r)
	}
	for line := range strings.Lines(r.stdout) {
		if len(line) > 4096 {
			t.Fatalf("an audit record of %d bytes: records are not bounded", len(line))
		}
	}
	recs := parseAudit(t, r.stdout)
	var sessions []string
	var denied, dropped int
	var markers []string
	for _, rec := range recs {
		if !slices.Contains(sessions, rec.Session) {
			sessions = append(sessions, rec.Session)
		}
		switch {
		case rec.Kind == "dropped":
			dropped += rec.Dropped
		case rec.Decision == "deny":
			denied++
			if rec.PathBytes != 60001 || len(rec.Path) > 1024 {
				t.Fatalf("a flood record's path: %d bytes kept, path_bytes %d; want at most 1024 kept and 60001", len(rec.Path), rec.PathBytes)
			}
		case rec.Decision == "allow":
			markers = append(markers, rec.Path)
		}
	}
	if want := []string{"/" + early, "/" + marker}; !slices.Equal(markers, want) {
		t.Errorf("allowed records after the flood: %q, want %q", markers, want)
	}
	if len(sessions) != 2 {
		t.Errorf("sessions in the log: %q, want 2", sessions)
	}
	if denied != budget || dropped != flood-budget {
		t.Errorf("%d denied records written and %d counted as dropped; want %d and %d", denied, dropped, budget, flood-budget)
	}
	text := run(t, p.dir, nil, "", "logs", "proxy")
	said := 0
	for _, m := range regexp.MustCompile(`(?m) (\d+) denied records? dropped `).FindAllStringSubmatch(text.stdout, -1) {
		n, _ := strconv.Atoi(m[1])
		said += n
	}
	if said != flood-budget {
		t.Errorf("logs proxy says %d denied records were dropped, want %d", said, flood-budget)
	}

	// The follower saw every allowed record and the dropped marker, written last.
	var seen []string
	for {
		line := followed.next()
		var rec auditLine
		_ = json.Unmarshal([]byte(line), &rec)
		if rec.Decision == "allow" {
			seen = append(seen, rec.Path)
		}
		if rec.Kind == "dropped" && rec.Session == sessions[len(sessions)-1] {
			break
		}
	}
	if !slices.Contains(seen, "/"+marker) {
		t.Errorf("the follower missed the marker: it saw %q", seen)
	}
}

// recorder is a listener in an outside host's namespace that keeps every byte each
// connection sends before anything else reads them (TLS included: there the bytes are
// ciphertext, and a credential in them means it crossed in clear).
// TestLogsEscapeFormatCharacters: a path with bidi controls and other format
// characters reaches no output of `devsandbox logs proxy` raw: text, --json, --follow.
func TestLogsEscapeFormatCharacters(t *testing.T) {
	requireRoot(t)
	o := newOutside(t)
	forEachIsolator(t, func(t *testing.T, iso string) {
		p := newProject(t)
		// U+202E RIGHT-TO-LEFT OVERRIDE, U+2066 LEFT-TO-RIGHT ISOLATE, U+200B ZERO WIDTH SPACE.
		p.mustSandbox(iso, []string{"--egress=proxy", "--allow", o.addr + ":8080"},
			fmt.Sprintf(`curl -s -o /dev/null -m 5 'http://%s:8080/evil%%E2%%80%%AEtxt.exe%%E2%%81%%A6%%E2%%80%%8Bx'`, o.addr))
		bad := func(s string) bool { return strings.ContainsAny(s, "\u202e\u2066\u200b\x1b") }
		for _, args := range [][]string{{"logs", "proxy"}, {"logs", "proxy", "--json"}} {
			r := run(t, p.dir, nil, "", args...)
			if r.code != 0 || !strings.Contains(r.stdout, "evil") || bad(r.stdout) {
				t.Errorf("%v prints format characters raw:\n%q", args, r.stdout)
			}
		}
		for _, extra := range [][]string{nil, {"--json"}} {
			cmd := command(t.Context(), p.dir, baseEnv(), append([]string{"logs", "proxy", "--follow"}, extra...)...)
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			line := bufio.NewReader(out)
			l, err := line.ReadString('\n')
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			if err != nil || !strings.Contains(l, "evil") || bad(l) {
				t.Errorf("logs proxy --follow %v: %q, %v", extra, l, err)
			}
		}
	})
}
