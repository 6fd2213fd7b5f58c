package docker

import (
	"strings"
	"testing"

	"github.com/devsandbox/devsandbox/isolator"
)

// Doctor's engine-files row: a local engine binds this machine's files; one behind a
// relay takes the remote path (a home volume), which an engine older than API 1.45
// also refuses writable anchors on, a warning naming the fix.
func TestFilesRow(t *testing.T) {
	cases := []struct {
		name  string
		local bool
		api   string
		state isolator.State
		want  []string
	}{
		{"dockerd", true, "1.41", isolator.Active, []string{"this machine's: WHY", "binds the project and the sandbox home from this host"}},
		{"a relay to Docker 26", false, "1.45", isolator.Active, []string{"another machine's", "WHY", "volume devsandbox-<name>-home", "API 1.45 mounts writable anchors as volume sub-paths"}},
		{"a relay to Docker 20.10", false, "1.41", isolator.Warning, []string{"another machine's", "WHY", "volume devsandbox-<name>-home", "API 1.41, older than 1.45", "writable anchor (a repository's .git", "is refused", "fix: upgrade the engine to Docker 26"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := filesRow(c.local, "WHY", c.api)
			text := r.Detail
			if r.State != isolator.Active {
				text = r.Reason + "; fix: " + r.Fix
			}
			if r.Name != "docker engine files" || r.State != c.state {
				t.Errorf("row %q %v, want %q %v", r.Name, r.State, "docker engine files", c.state)
			}
			for _, w := range c.want {
				if !strings.Contains(text, w) {
					t.Errorf("row says %q; want it to say %q", text, w)
				}
			}
		})
	}
}
