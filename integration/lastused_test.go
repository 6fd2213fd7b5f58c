//go:build integration

package integration

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestLastUsedNotFromTheFuture: `sandboxes list` and `prune` tell when a project
// was last used partly from its sandbox home's modification time, which the
// sandbox can set: a home dated 2100 must not make the project look used, or
// `sandboxes prune` never removes it (nor what it holds).
func TestLastUsedNotFromTheFuture(t *testing.T) {
	forEachIsolator(t, func(t *testing.T, iso string) {
		p := newProject(t)
		p.mustSandbox(iso, nil, `touch -d '2100-01-01 00:00:00' "$HOME"`)
		r := run(t, p.root, nil, "", "sandboxes", "list", "--json")
		var list []struct {
			Name     string
			LastUsed time.Time
		}
		if err := json.Unmarshal([]byte(r.stdout), &list); err != nil {
			t.Fatalf("sandboxes list --json: %v\n%s", err, r)
		}
		i := slices.IndexFunc(list, func(s struct {
			Name     string
			LastUsed time.Time
		}) bool {
			return s.Name == p.name()
		})
		if i < 0 {
			t.Fatalf("sandboxes list --json does not list %s:\n%s", p.name(), r)
		}
		if list[i].LastUsed.After(time.Now().Add(time.Hour)) {
			t.Errorf("sandboxes list takes %s as last used %v, a time the sandbox set", p.name(), list[i].LastUsed)
		}
		r = run(t, p.root, nil, "", "sandboxes", "prune", "--dry-run", "--days", "0")
		if !strings.Contains(r.stdout, "would remove "+p.name()+":") {
			t.Errorf("sandboxes prune --days 0 --dry-run does not offer %s:\n%s", p.name(), r)
		}
	})
}
