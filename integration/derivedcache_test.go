//go:build integration

package integration

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// `sandboxes prune` drops the derived-image cache's entry of an image the engine no
// longer has, keeps one whose image it has, and keeps the entries of an engine that
// does not answer, saying so; --dry-run changes nothing. A throwaway engine: a real
// prune on the machine's engine would touch other runs' leftovers.
func TestPruneDerivedCacheGoneImage(t *testing.T) {
	te := newThrowawayEngine(t, "devsandbox-test/busybox:1")
	p := newProject(t)
	busybox := te.docker(t, "image", "inspect", "--format", "{{.Id}}", "devsandbox-test/busybox:1")
	gone := "sha256:" + strings.Repeat("0", 64)
	down := "unix://" + p.path("no-engine.sock")
	cache := map[string]string{
		te.host + " " + busybox + " 00000000000000000000000000000000": gone,
		te.host + " " + busybox + " 11111111111111111111111111111111": busybox,
		down + " " + busybox + " 00000000000000000000000000000000":    "sha256:" + strings.Repeat("1", 64),
	}
	b, err := json.Marshal(cache)
	if err != nil {
		t.Fatal(err)
	}
	p.mkdir("state/devsandbox")
	p.write("state/devsandbox/docker-images.json", string(b))
	path := p.path("state/devsandbox/docker-images.json")
	env := []string{"DOCKER_HOST=" + te.host, "XDG_STATE_HOME=" + p.path("state"), "XDG_DATA_HOME=" + p.path("data")}
	short := func(id string) string { return strings.TrimPrefix(id, "sha256:")[:12] }
	entryLines := func(out string) []string {
		var l []string
		for _, s := range strings.Split(out, "\n") {
			if strings.Contains(s, "docker-images.json") {
				l = append(l, s)
			}
		}
		return l
	}
	for _, verb := range []string{"would remove", "removed"} {
		args := []string{"--config", p.noPodmanConfig(), "sandboxes", "prune"}
		if verb == "would remove" {
			args = append(args, "--dry-run")
		}
		r := run(t, p.dir, env, "", args...)
		want := []string{
			verb + " an entry of " + path + ": the image " + short(gone) + " (derived from " + short(busybox) + ") on " + te.host + ", but that engine no longer has it",
			"not checked: whether the engine at " + down + " still has the image of 1 entry of " + path + ", kept: a run used them within --days, or no use of them is recorded: the engine does not answer: ",
		}
		got := entryLines(r.stdout)
		if r.code != 0 || len(got) != 2 || got[0] != want[0] || !strings.HasPrefix(got[1], want[1]) {
			t.Fatalf("prune (%s): the cache's lines\n%s\nwant\n%s\n%s", verb, strings.Join(got, "\n"), strings.Join(want, "\n"), r)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var left map[string]string
		if err := json.Unmarshal(data, &left); err != nil {
			t.Fatal(err)
		}
		wantLeft := []string{busybox, "sha256:" + strings.Repeat("1", 64)}
		if verb == "would remove" {
			wantLeft = append(wantLeft, gone)
		}
		got = slices.Sorted(maps.Values(left))
		slices.Sort(wantLeft)
		if !slices.Equal(got, wantLeft) {
			t.Errorf("after prune (%s): the cache holds %q, want %q", verb, got, wantLeft)
		}
		if fi, err := os.Lstat(filepath.Dir(path)); err != nil || !fi.IsDir() {
			t.Errorf("the state directory: %v %v", fi, err)
		}
	}
}
