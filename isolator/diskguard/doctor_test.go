package diskguard

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/devsandbox/devsandbox/isolator"
)

// Doctor's reserve rows: one per file system a run would watch (paths on the same one
// are named together), failed under the reserve, warned of under twice it, failed when
// the free space cannot be read; a missing path is left out, as Check leaves it.
func TestRows(t *testing.T) {
	const gib = 1 << 30
	fs := map[string]Free{
		"/proj":  {Dev: 1, Avail: 10 * gib},
		"/home":  {Dev: 1, Avail: 10 * gib},
		"/state": {Dev: 2, Avail: gib + gib/2},
		"/small": {Dev: 3, Avail: gib / 2},
	}
	free := func(p string) (Free, error) {
		switch p {
		case "/gone":
			return Free{}, os.ErrNotExist
		case "/broken":
			return Free{}, errors.New("input/output error")
		}
		return fs[p], nil
	}
	type row struct {
		state isolator.State
		text  string
	}
	cases := []struct {
		name    string
		reserve uint64
		paths   []string
		want    []row
	}{
		{"plenty, one file system for two paths", gib, []string{"/proj", "/gone", "/home"},
			[]row{{isolator.Active, "10.0 GiB available on the file system holding /proj, /home; reserve 1.0 GiB"}}},
		{"close to the reserve", gib, []string{"/proj", "/state"}, []row{
			{isolator.Active, "holding /proj; reserve 1.0 GiB"},
			{isolator.Warning, "1.5 GiB available on the file system holding /state, 512.0 MiB above the 1.0 GiB reserve: a run that writes that much there is stopped (exit 125); fix: free space there, or lower sandbox.disk_reserve in your config file"}}},
		{"under the reserve", gib, []string{"/small"}, []row{
			{isolator.Unavailable, "512.0 MiB available on the file system holding /small, under the 1.0 GiB reserve: a run from here is refused before it starts (exit 125); fix: free space there, or lower sandbox.disk_reserve"}}},
		{"unreadable", gib, []string{"/broken"}, []row{
			{isolator.Unavailable, "reading the free space of the file system holding /broken: input/output error; a run from here is refused"}}},
		{"no reserve", 0, []string{"/small", "/broken"}, []row{
			{isolator.Active, "512.0 MiB available on the file system holding /small; no reserve (sandbox.disk_reserve = \"0\"): a run may fill it"}}},
		{"no Plan", gib, nil, []row{{isolator.Active, "reserve 1.0 GiB on each file system a run writes"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := Rows(c.reserve, c.paths, free)
			if len(got) != len(c.want) {
				t.Fatalf("%d rows, want %d: %+v", len(got), len(c.want), got)
			}
			for i, r := range got {
				text := r.Detail
				if r.State != isolator.Active {
					text = r.Reason + "; fix: " + r.Fix
				}
				if r.Name != reserveRow || r.State != c.want[i].state || !strings.Contains(text, c.want[i].text) {
					t.Errorf("row %d: %s %v %q; want %v with %q", i, r.Name, r.State, text, c.want[i].state, c.want[i].text)
				}
			}
		})
	}
}

// HostFree reads this host: the same device for a directory and its subdirectory on
// one file system, ErrNotExist for a missing path.
func TestHostFree(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(dir+"/sub", 0o755); err != nil {
		t.Fatal(err)
	}
	a, err := HostFree(dir)
	if err != nil {
		t.Fatal(err)
	}
	b, err := HostFree(dir + "/sub")
	if err != nil || a.Dev != b.Dev || a.Avail == 0 {
		t.Errorf("HostFree: %+v and %+v (%v); want one device with space available", a, b, err)
	}
	if _, err := HostFree(dir + "/gone"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("HostFree of a missing path: %v, want ErrNotExist", err)
	}
}
