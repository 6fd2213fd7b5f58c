package imageuse

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestDecide(t *testing.T) {
	now := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	day := 24 * time.Hour
	const why = "the default image of devsandbox A, this is B"
	for _, c := range []struct {
		name          string
		last, created time.Time
		maxAge        time.Duration
		keep          bool
		reason        string
	}{
		{"used recently", now.Add(-2 * day), now.Add(-100 * day), 30 * day, true, why + ", but a run used it 2 days ago"},
		{"used just now", now.Add(-time.Second), now.Add(-100 * day), day, true, why + ", but a run used it just now"},
		{"used just now, --days 0", now.Add(-time.Second), now.Add(-100 * day), 0, false, why + ", and no run used it for less than a minute"},
		{"used exactly --days ago", now.Add(-30 * day), now.Add(-100 * day), 30 * day, true, why + ", but a run used it 30 days ago"},
		{"used long ago", now.Add(-31 * day), now.Add(-100 * day), 30 * day, false, why + ", and no run used it for 31 days"},
		{"used hours ago, --days 0", now.Add(-5 * time.Hour), now.Add(-100 * day), 0, false, why + ", and no run used it for 5 hours"},
		{"record in the future", now.Add(time.Hour), now.Add(-100 * day), 30 * day, true, why + ", but a run used it just now"},
		{"used long ago, made recently", now.Add(-40 * day), now.Add(-time.Hour), 30 * day, false, why + ", and no run used it for 40 days"},
		{"no record, new", time.Time{}, now.Add(-1 * day), 30 * day, true, why + ", but it was made 1 day ago (no use of it is recorded yet)"},
		{"no record, old", time.Time{}, now.Add(-45 * day), 30 * day, false, why + ", no use of it is recorded and it was made 45 days ago"},
		{"no record, age unknown", time.Time{}, time.Time{}, 0, true, why + ", but no use of it is recorded and the engine does not say when it was made"},
		{"no record, minutes old, --days 0", time.Time{}, now.Add(-3 * time.Minute), 0, false, why + ", no use of it is recorded and it was made 3 minutes ago"},
	} {
		keep, reason := Decide(why, c.last, c.created, now, c.maxAge)
		if keep != c.keep || reason != c.reason {
			t.Errorf("%s: Decide = %v, %q; want %v, %q", c.name, keep, reason, c.keep, c.reason)
		}
	}
}

func TestRecord(t *testing.T) {
	root := t.TempDir()
	id := "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	if got := Last(root, Docker, id); !got.IsZero() {
		t.Fatalf("Last before any record = %v", got)
	}
	t1 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, at := range []time.Time{t1, t1.Add(48 * time.Hour)} {
		if err := Record(root, Docker, id, at); err != nil {
			t.Fatal(err)
		}
		if got := Last(root, Docker, id); !got.Equal(at) {
			t.Errorf("Last = %v, want %v", got, at)
		}
	}
	if got := Last(root, Podman, id); !got.IsZero() {
		t.Errorf("podman's record of a docker use: %v", got)
	}
	fi, err := os.Stat(filepath.Join(root, Dir))
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("records' directory: %v, %v; want mode 0700", fi, err)
	}
	for _, bad := range []string{"", "../../x", "sha256:", "a.b", "abc/def", "sha256:ab-c"} {
		if Record(root, Docker, bad, t1) == nil || Path(root, Docker, bad) != "" {
			t.Errorf("id %q was accepted", bad)
		}
	}
	if Path(root, "../x", "abc") != "" {
		t.Error("an engine name with a path was accepted")
	}
	Forget(root, Docker, id)
	if got := Last(root, Docker, id); !got.IsZero() {
		t.Errorf("Last after Forget = %v", got)
	}
}

// A record exists after the first use: later uses are one utimensat(2).
func BenchmarkRecord(b *testing.B) {
	root := b.TempDir()
	id := "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	now := time.Now()
	if err := Record(root, Docker, id, now); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := Record(root, Docker, id, now); err != nil {
			b.Fatal(err)
		}
	}
}
