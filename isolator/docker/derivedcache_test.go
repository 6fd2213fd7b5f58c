package docker

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"

	"github.com/devsandbox/devsandbox/isolator/imageuse"
)

// otherEngine is an engine the derived-image cache names besides prune's own: it
// answers image inspects only.
type otherEngine struct {
	Engine // nil: unexpected calls panic
	images map[string]image.InspectResponse
	down   error
	closed bool
}

func (o *otherEngine) ImageInspect(_ context.Context, id string, _ ...client.ImageInspectOption) (image.InspectResponse, error) {
	if o.down != nil {
		return image.InspectResponse{}, o.down
	}
	in, ok := o.images[id]
	if !ok {
		return image.InspectResponse{}, cerrdefs.ErrNotFound
	}
	return in, nil
}

func (o *otherEngine) Close() error { o.closed = true; return nil }

func sha(c string) string { return "sha256:" + strings.Repeat(c, 64) }

// cacheFixture is a state root with a derived-image cache of entries on prune's
// engine (unix:///here.sock), another local engine (unix:///other.sock), one that
// does not answer (unix:///down.sock) and one over TCP.
func cacheFixture(t *testing.T, now time.Time) (b *Isolator, stateRoot string, all []image.Summary, other *otherEngine) {
	t.Helper()
	stateRoot = t.TempDir()
	day := 24 * time.Hour
	m := map[string]string{
		"unix:///here.sock " + sha("b") + " k1":       sha("1"), // here, used yesterday
		"unix:///here.sock " + sha("b") + " k2":       sha("2"), // here, gone
		"unix:///here.sock " + sha("b") + " k3":       sha("3"), // here, unused for 40 days
		"unix:///here.sock " + sha("b") + " k4":       sha("4"), // here, unused for 40 days, a container uses it
		"unix:///here.sock " + sha("b") + " k5":       sha("5"), // here, removed by this prune
		"unix:///other.sock " + sha("b") + " k1":      sha("6"), // there, gone
		"unix:///other.sock " + sha("b") + " k2":      sha("7"), // there, no record, loaded 2 days ago
		"unix:///down.sock " + sha("b") + " k1":       sha("8"), // down, used yesterday
		"unix:///down.sock " + sha("b") + " k2":       sha("9"), // down, unused for 40 days
		"tcp://remote:2376 " + sha("b") + " k1":       sha("a"), // over TCP, no record
		"unix:///with space.sock " + sha("b") + " k1": sha("c"), // there is no such engine: Dial fails
		"garbage": sha("d"),
	}
	for id, ago := range map[string]time.Duration{sha("1"): day, sha("3"): 40 * day, sha("4"): 40 * day, sha("8"): day, sha("9"): 40 * day} {
		if err := imageuse.Record(stateRoot, imageuse.Docker, id, now.Add(-ago)); err != nil {
			t.Fatal(err)
		}
	}
	for k, v := range m {
		writeRecord(filepath.Join(stateRoot, derivedCacheFile), k, v)
	}
	old := now.Add(-100 * day).Unix()
	for _, c := range "1345" {
		all = append(all, image.Summary{ID: sha(string(c)), Created: old})
	}
	other = &otherEngine{images: map[string]image.InspectResponse{
		sha("7"): {ID: sha("7"), Created: now.Add(-100 * day).Format(time.RFC3339Nano), Metadata: image.Metadata{LastTagTime: now.Add(-2 * day)}},
	}}
	b = &Isolator{}
	b.dialAt = func(a Address) (Engine, error) {
		switch a.Host {
		case "unix:///other.sock":
			return other, nil
		case "unix:///down.sock":
			return &otherEngine{down: errors.New("connection refused")}, nil
		}
		return nil, errors.New("no such socket")
	}
	return b, stateRoot, all, other
}

// prune's pass over the derived-image cache: an entry goes when its image is gone
// from the engine the entry names, was removed by this prune, or no run used it
// within --days; one a container uses stays; an engine that cannot be asked keeps its
// recently used entries, and a line says so; --dry-run writes nothing.
func TestPruneDerivedCache(t *testing.T) {
	now := time.Now()
	b, stateRoot, all, other := cacheFixture(t, now)
	path := filepath.Join(stateRoot, derivedCacheFile)
	before, _ := os.ReadFile(path)
	prune := func(dry bool) []string {
		t.Helper()
		lines, err := b.pruneDerivedCache(context.Background(), nil, "unix:///here.sock", all, map[string]int{sha("4"): 1}, stateRoot, map[string]bool{sha("5"): true}, now, 30*24*time.Hour, dry)
		if err != nil {
			t.Fatal(err)
		}
		return lines
	}
	e := func(id, base string) string { return "the image " + id + " (derived from bbbbbbbbbbbb) on " + base }
	want := func(verb, removes string) []string {
		return []string{
			verb + " an entry of " + path + ": \"garbage\", not an entry a run can use",
			verb + " an entry of " + path + ": " + e("999999999999", "unix:///down.sock") + ", and no run used it for 40 days",
			verb + " an entry of " + path + ": " + e("222222222222", "unix:///here.sock") + ", but that engine no longer has it",
			verb + " an entry of " + path + ": " + e("333333333333", "unix:///here.sock") + ", and no run used it for 40 days",
			verb + " an entry of " + path + ": " + e("555555555555", "unix:///here.sock") + ", which this prune " + removes,
			verb + " an entry of " + path + ": " + e("666666666666", "unix:///other.sock") + ", but that engine no longer has it",
			"not checked: whether the engine at tcp://remote:2376 still has the image of 1 entry of " + path + ", kept: a run used them within --days, or no use of them is recorded: an engine reached over the network is asked only by a prune whose configuration names it (its TLS material is there)",
			"not checked: whether the engine at unix:///down.sock still has the image of 1 entry of " + path + ", kept: a run used them within --days, or no use of them is recorded: the engine does not answer: connection refused",
			"not checked: whether the engine at unix:///with space.sock still has the image of 1 entry of " + path + ", kept: a run used them within --days, or no use of them is recorded: no such socket",
		}
	}
	if lines := prune(true); !slices.Equal(lines, want("would remove", "would remove")) {
		t.Errorf("dry run:\n%q\nwant\n%q", lines, want("would remove", "would remove"))
	}
	if after, _ := os.ReadFile(path); string(after) != string(before) {
		t.Errorf("the dry run changed the cache")
	}
	if lines := prune(false); !slices.Equal(lines, want("removed", "removed")) {
		t.Errorf("prune:\n%q\nwant\n%q", lines, want("removed", "removed"))
	}
	var left []string
	for k := range readRecords(path) {
		left = append(left, k)
	}
	slices.Sort(left)
	wantLeft := []string{
		"tcp://remote:2376 " + sha("b") + " k1",
		"unix:///down.sock " + sha("b") + " k1",
		"unix:///here.sock " + sha("b") + " k1",
		"unix:///here.sock " + sha("b") + " k4",
		"unix:///other.sock " + sha("b") + " k2",
		"unix:///with space.sock " + sha("b") + " k1",
	}
	if !slices.Equal(left, wantLeft) {
		t.Errorf("left\n%q\nwant\n%q", left, wantLeft)
	}
	if !other.closed {
		t.Error("the other engine's client was not closed")
	}
}

// The cache is read and rewritten without following a link, and an entry changed
// while prune asked the engines stays: prune drops only what it judged, under the
// runs' lock, on the file as it is then.
func TestPruneDerivedCacheReplaced(t *testing.T) {
	now := time.Now()
	day := 24 * time.Hour
	stale := "unix:///here.sock " + sha("b") + " k2" // its image is gone
	t.Run("a run wrote meanwhile", func(t *testing.T) {
		b, stateRoot, all, _ := cacheFixture(t, now)
		path := filepath.Join(stateRoot, derivedCacheFile)
		b.afterCacheCheck = func() {
			writeRecord(path, stale, sha("1"))           // made again: another ID
			writeRecord(path, "unix:///new k", sha("e")) // a new entry
		}
		if _, err := b.pruneDerivedCache(context.Background(), nil, "unix:///here.sock", all, nil, stateRoot, nil, now, 30*day, false); err != nil {
			t.Fatal(err)
		}
		m := readRecords(path)
		if m[stale] != sha("1") || m["unix:///new k"] != sha("e") {
			t.Errorf("prune dropped what a run wrote meanwhile: %v", m)
		}
		if _, ok := m["unix:///here.sock "+sha("b")+" k3"]; ok {
			t.Errorf("the aged entry stayed: %v", m)
		}
	})
	// The file a planted link names holds the stale entry: read through the link, it
	// would be dropped and the map written.
	planted := `{"` + stale + `":"` + sha("2") + `"}`
	victim := func(t *testing.T) string {
		t.Helper()
		v := filepath.Join(t.TempDir(), "victim")
		if err := os.WriteFile(v, []byte(planted), 0o600); err != nil {
			t.Fatal(err)
		}
		return v
	}
	t.Run("replaced by a link meanwhile", func(t *testing.T) {
		b, stateRoot, all, _ := cacheFixture(t, now)
		path, v := filepath.Join(stateRoot, derivedCacheFile), victim(t)
		b.afterCacheCheck = func() {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(v, path); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := b.pruneDerivedCache(context.Background(), nil, "unix:///here.sock", all, nil, stateRoot, nil, now, 30*day, false); err != nil {
			t.Fatal(err)
		}
		if got, _ := os.ReadFile(v); string(got) != planted {
			t.Errorf("the file the link names was written: %q", got)
		}
		if fi, err := os.Lstat(path); err != nil || fi.Mode()&os.ModeSymlink == 0 {
			t.Errorf("the link was replaced: the rewrite read through it (and dropped the stale entry it found there): %v %v", fi, err)
		}
	})
	t.Run("a link at the file", func(t *testing.T) {
		b, stateRoot, all, _ := cacheFixture(t, now)
		path, v := filepath.Join(stateRoot, derivedCacheFile), victim(t)
		if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(v, path); err != nil {
			t.Fatal(err)
		}
		lines, err := b.pruneDerivedCache(context.Background(), nil, "unix:///here.sock", all, nil, stateRoot, nil, now, 30*day, false)
		if err == nil || !strings.Contains(err.Error(), "left as it is") || len(lines) != 0 {
			t.Errorf("a link at the cache: %q, %v", lines, err)
		}
		if got, _ := os.ReadFile(v); string(got) != planted {
			t.Errorf("the file the link names was written: %q", got)
		}
	})
}
