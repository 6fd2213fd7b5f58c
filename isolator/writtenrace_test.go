package isolator

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// TestWrittenIndexPartialLine: a launch reading the index while another appends to
// it may see the append's first bytes only, a last line without its newline. That
// line is not refused: it is what the other launch has not finished writing (its
// records are written once the append took), and the lines before it are judged as
// ever. A complete line that does not read is still refused. Before, the launch
// refused every program in a directory the user can write ("its last line is cut
// short").
func TestWrittenIndexPartialLine(t *testing.T) {
	f := newWrittenFixture(t)
	index := filepath.Join(f.data, WrittenIndex)
	good, err := os.ReadFile(index)
	if err != nil {
		t.Fatal(err)
	}
	partial := string(good) + `bind "` + filepath.Join(f.root, "src", "c")
	if err := os.WriteFile(index, []byte(partial), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := SandboxWritten(f.data, f.state, "bubblewrap", filepath.Join(f.local, "bwrap")); err != nil {
		t.Errorf("SandboxWritten with an append under way = %v, want taken", err)
	}
	if err := SandboxWritten(f.data, f.state, "bubblewrap", filepath.Join(f.bound, "bwrap")); err == nil || !strings.Contains(err.Error(), f.projA) {
		t.Errorf("SandboxWritten of A's bind with an append under way = %v, want refused naming %s", err, f.projA)
	}
	bad := string(good) + "project /src/c\n" + `project "/src/d`
	if err := os.WriteFile(index, []byte(bad), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := SandboxWritten(f.data, f.state, "bubblewrap", filepath.Join(f.local, "bwrap")); err == nil || !errors.Is(err, ErrProtection) || !strings.Contains(err.Error(), "line 3") {
		t.Errorf("SandboxWritten with a complete bad line before an append under way = %v, want ErrProtection naming line 3", err)
	}
}

// TestWrittenIndexNotYetWritten: an index with no complete line (the first launch
// made the file and has not written to it, or its write failed) is no index: the
// projects' records are read. Before, it was read as an index knowing nothing, and a
// program in a project recorded only by an earlier devsandbox was taken.
func TestWrittenIndexNotYetWritten(t *testing.T) {
	f := newWrittenFixture(t)
	index := filepath.Join(f.data, WrittenIndex)
	prog := filepath.Join(f.projA, ".venv", "bin", "bwrap")
	for name, content := range map[string]string{
		"empty":        "",
		"partial line": `project "` + f.projA,
	} {
		t.Run(name, func(t *testing.T) {
			if err := os.WriteFile(index, []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := SandboxWritten(f.data, f.state, "bubblewrap", prog); err == nil || !strings.Contains(err.Error(), f.projA) {
				t.Errorf("SandboxWritten(%s) with an index of %q = %v, want refused by A's record", prog, content, err)
			}
		})
	}
}

// TestWrittenIndexTornTail: a launch killed in the middle of its append (or whose
// write ran out of space) leaves a last line without its newline. The next append
// drops that piece before it writes, so it never becomes a complete line that does
// not read. Before, the next launch's line was glued to it and every later launch
// refused ("line 3: not a line devsandbox writes").
func TestWrittenIndexTornTail(t *testing.T) {
	f := newWrittenFixture(t)
	index := filepath.Join(f.data, WrittenIndex)
	good, err := os.ReadFile(index)
	if err != nil {
		t.Fatal(err)
	}
	fh, err := os.OpenFile(index, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fh.WriteString(`bind "/torn/dir" "/src/`); err != nil {
		t.Fatal(err)
	}
	fh.Close()
	c := &Plan{Project: Project{Dir: filepath.Join(f.root, "src", "c")}, SandboxHome: filepath.Join(f.data, "c-9", "home")}
	if err := os.MkdirAll(filepath.Join(c.Project.Dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(c.Project.Dir, "bin", "bwrap"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	RecordProject(c)
	got, err := os.ReadFile(index)
	if want := string(good) + projectLine(c.Project.Dir); err != nil || string(got) != want {
		t.Errorf("the index after a torn append and C's launch:\n%s\nwant:\n%s", got, want)
	}
	if err := SandboxWritten(f.data, f.state, "bubblewrap", filepath.Join(f.local, "bwrap")); err != nil {
		t.Errorf("SandboxWritten after a torn append and C's launch = %v, want taken", err)
	}
	if err := SandboxWritten(f.data, f.state, "bubblewrap", filepath.Join(c.Project.Dir, "bin", "bwrap")); err == nil || !strings.Contains(err.Error(), c.Project.Dir) {
		t.Errorf("SandboxWritten of a program in C = %v, want refused naming %s", err, c.Project.Dir)
	}
}

// TestWrittenIndexConcurrent: launches of new projects (RecordProject, whose lines
// are long enough to cross pages) append to the index while other launches judge
// programs (SandboxWritten), all at once, in a data directory of an earlier
// devsandbox (records, no index: the first append makes it from them). No judgement
// may refuse a program no sandbox writes, nor take one in a project only the
// records know. Before: refusals naming a last line cut short, and programs in
// recorded projects taken while the first launch had made the index and not yet
// written it.
func TestWrittenIndexConcurrent(t *testing.T) {
	const (
		rounds   = 6
		recorded = 60 // projects of an earlier devsandbox
		writers  = 8
		readers  = 2
		minReads = 50 // per reader and round, however fast the writers are
	)
	long := filepath.Join(strings.Repeat("x", 200), strings.Repeat("x", 200)) // lines cross pages
	var refused, taken atomic.Int64
	var firstRefusal, firstTaken atomic.Value
	for round := 0; round < rounds; round++ {
		root := t.TempDir()
		data := filepath.Join(root, "data", "devsandbox")
		state := filepath.Join(root, "state", "devsandbox")
		local := filepath.Join(root, "home", ".local", "bin")
		old := filepath.Join(root, "src", long, "old-0")
		for _, d := range []string{state, local, filepath.Join(old, "bin")} {
			if err := os.MkdirAll(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		for i := 0; i < recorded; i++ {
			dir := filepath.Join(data, fmt.Sprintf("old-%d", i))
			if err := os.MkdirAll(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			proj := filepath.Join(root, "src", long, fmt.Sprintf("old-%d", i))
			if err := os.WriteFile(filepath.Join(dir, "project"), []byte(proj+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		var wg, rg sync.WaitGroup
		var done atomic.Bool
		for r := 0; r < readers; r++ {
			rg.Add(1)
			go func() {
				defer rg.Done()
				for n := 0; n < minReads || !done.Load(); n++ {
					if err := SandboxWritten(data, state, "bubblewrap", filepath.Join(local, "bwrap")); err != nil {
						refused.Add(1)
						firstRefusal.CompareAndSwap(nil, err.Error())
					}
					if err := SandboxWritten(data, state, "bubblewrap", filepath.Join(old, "bin", "bwrap")); err == nil {
						taken.Add(1)
						firstTaken.CompareAndSwap(nil, "a program in "+old+", a project an earlier devsandbox recorded, was taken")
					}
				}
			}()
		}
		for w := 0; w < writers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				proj := filepath.Join(root, "src", long, fmt.Sprintf("new-%d", w))
				home := filepath.Join(data, fmt.Sprintf("new-%d", w), "home")
				if err := os.MkdirAll(home, 0o700); err != nil {
					t.Error(err)
					return
				}
				var mounts []Mount
				for b := 0; b < 4; b++ {
					src := filepath.Join(root, "binds", long, fmt.Sprintf("%d-%d", w, b))
					mounts = append(mounts, Mount{Kind: Bind, Source: src, Dest: src, Why: "sandbox.rw_binds"})
				}
				RecordProject(&Plan{Project: Project{Dir: proj}, SandboxHome: home, Mounts: mounts})
			}()
		}
		wg.Wait()
		done.Store(true)
		rg.Wait()
		ents, ok, err := readWritten(data)
		dirs := map[string]bool{}
		for _, e := range ents {
			dirs[e.dir] = true
		}
		if err != nil || !ok || len(dirs) != recorded+writers*5 {
			t.Errorf("round %d: the index after every launch: %d directories, %v, %v; want %d", round, len(dirs), ok, err, recorded+writers*5)
		}
	}
	if n := refused.Load(); n > 0 {
		t.Errorf("%d judgements of a program no sandbox writes refused while launches appended; the first: %v", n, firstRefusal.Load())
	}
	if n := taken.Load(); n > 0 {
		t.Errorf("%d judgements took a program in a recorded project while launches appended: %v", n, firstTaken.Load())
	}
}

// TestRecordsReplacedWhole: a project's records (project, binds) are read by other
// launches (the index's first append, `sandboxes list` and prune, the next launch's
// comparison) while a launch rewrites them; a reader sees the old content or the new,
// never an empty or cut file. Before, a record was truncated, then written.
func TestRecordsReplacedWhole(t *testing.T) {
	root := t.TempDir()
	data := filepath.Join(root, "data", "devsandbox")
	home := filepath.Join(data, "p-1", "home")
	if err := os.MkdirAll(home, 0o700); err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("y", 2000)
	plans := make([]*Plan, 2)
	want := map[string]map[string]bool{"project": {}, bindsRecord: {}}
	for i := range plans {
		proj := filepath.Join(root, "src", fmt.Sprintf("%s-%d", long, i))
		src := filepath.Join(root, "binds", fmt.Sprintf("%s-%d", long, i))
		plans[i] = &Plan{Project: Project{Dir: proj}, SandboxHome: home,
			Mounts: []Mount{{Kind: Bind, Source: src, Dest: src, Why: "sandbox.rw_binds"}}}
		want["project"][proj+"\n"] = true
		want[bindsRecord][bindLine(src, proj, "sandbox.rw_binds")] = true
	}
	RecordProject(plans[0])
	const writes = 300
	var done atomic.Bool
	var wg sync.WaitGroup
	var bad atomic.Value
	for name := range want {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; n < 100 || !done.Load(); n++ {
				b, err := os.ReadFile(filepath.Join(data, "p-1", name))
				if err != nil || !want[name][string(b)] {
					bad.CompareAndSwap(nil, fmt.Sprintf("the record %s read %d bytes (%v) while a launch rewrote it", name, len(b), err))
				}
			}
		}()
	}
	for n := 1; n <= writes; n++ {
		RecordProject(plans[n%2])
	}
	done.Store(true)
	wg.Wait()
	if b := bad.Load(); b != nil {
		t.Error(b)
	}
	ents, _ := os.ReadDir(filepath.Join(data, "p-1"))
	if len(ents) != 3 {
		t.Errorf("the project's directory after %d launches holds %d entries, want home, project, binds", writes, len(ents))
	}
}

// TestWrittenIndexAppendsWhileRead: launches append to the index (recordWritten),
// each many lines at once, as the first launch of a data directory with hundreds of
// records does, while a reader reads it (readWritten) again and again, for a fixed
// number of rounds and appends. No read may fail. Before, a read that came while an
// append was copied into the file page by page failed: "line N: not a line
// devsandbox writes" (the append's last line it saw, cut short).
func TestWrittenIndexAppendsWhileRead(t *testing.T) {
	const (
		rounds  = 40
		appends = 3   // per round
		lines   = 150 // per append, a kilobyte each
	)
	long := strings.Repeat("z", 900)
	var failed atomic.Value
	var reads atomic.Int64
	for round := 0; round < rounds; round++ {
		data := filepath.Join(t.TempDir(), "devsandbox")
		if err := os.MkdirAll(data, 0o700); err != nil {
			t.Fatal(err)
		}
		if !recordWritten(data, []string{projectLine("/first")}) {
			t.Fatal("the first append failed")
		}
		var done atomic.Bool
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; n < 10 || !done.Load(); n++ {
				if _, _, err := readWritten(data); err != nil {
					failed.CompareAndSwap(nil, err.Error())
				}
				reads.Add(1)
			}
		}()
		for a := 0; a < appends; a++ {
			var batch []string
			for l := 0; l < lines; l++ {
				batch = append(batch, projectLine(fmt.Sprintf("/p/%d/%d/%s", a, l, long)))
			}
			if !recordWritten(data, batch) {
				t.Fatalf("append %d failed", a)
			}
		}
		done.Store(true)
		wg.Wait()
		ents, ok, err := readWritten(data)
		if err != nil || !ok || len(ents) != 1+appends*lines {
			t.Errorf("round %d: the index after %d appends: %d entries, %v, %v; want %d", round, appends, len(ents), ok, err, 1+appends*lines)
		}
	}
	if f := failed.Load(); f != nil {
		t.Errorf("a read of the index while launches appended failed (%d reads): %v", reads.Load(), f)
	}
}
