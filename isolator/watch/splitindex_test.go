package watch

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// A split index keeps most entries in $GIT_DIR/sharedindex.<hash>, which git reads
// as the index's own: its gitlinks, and a gitlink that replaces a shared entry (an
// entry with an empty name in the index file), are found; the index file alone
// holds neither.
func TestSplitIndexGitlinks(t *testing.T) {
	requireGit(t)
	dir := t.TempDir()
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git("init", "-q")
	for _, f := range []string{"a.txt", "b.txt", "dir/c.txt"} {
		os.MkdirAll(filepath.Join(dir, filepath.Dir(f)), 0o755)
		os.WriteFile(filepath.Join(dir, f), []byte(f), 0o644)
	}
	git("add", ".")
	git("update-index", "--add", "--cacheinfo", "160000,"+strings.Repeat("1", 40)+",vendor/x")
	git("update-index", "--split-index")
	// a.txt's entry, in the shared index, replaced in place by a gitlink.
	git("update-index", "--cacheinfo", "160000,"+strings.Repeat("2", 40)+",a.txt")
	b, err := os.ReadFile(filepath.Join(dir, ".git/index"))
	if err != nil {
		t.Fatal(err)
	}
	ix, err := readIndex(bytes.NewReader(b), int64(len(b)), 20, mainEntry)
	if err != nil || ix.shared == "" {
		t.Fatalf("the split index: %+v, %v", ix, err)
	}
	if own, _ := gitlinks(b, 20); len(own) != 0 {
		t.Errorf("the index file holds gitlinks of its own: %q", own)
	}
	sb, err := os.ReadFile(filepath.Join(dir, ".git/sharedindex."+ix.shared))
	if err != nil {
		t.Fatal(err)
	}
	sh, err := readIndex(bytes.NewReader(sb), int64(len(sb)), 20, allEntries)
	if err != nil {
		t.Fatal(err)
	}
	replaced, known := ix.replacedGitlinks()
	got := splitGitlinks(sh, replaced)
	slices.Sort(got)
	if !known || strings.Join(got, " ") != "a.txt vendor/x" {
		t.Errorf("gitlinks of the split index: %q (replace bitmap read: %v)", got, known)
	}
	// Without a replace bitmap to say which entry is replaced, none is guessed.
	ix.replaceKnown = false
	if _, known := ix.replacedGitlinks(); known {
		t.Error("replaced gitlinks known without the replace bitmap")
	}
}

func TestEwahEach(t *testing.T) {
	// collect gathers at most limit set bits.
	collect := func(b []byte, limit int) ([]int, int, error) {
		var bits []int
		n, err := ewahEach(b, func(p int64) error {
			if len(bits) == limit {
				return errIndex
			}
			bits = append(bits, int(p))
			return nil
		})
		return bits, n, err
	}
	// 130 bits: a run-length word (no run, 2 literal words), bits 0, 3 and 64+1.
	b := []byte{0, 0, 0, 130, 0, 0, 0, 3}
	b = append(b, 0, 0, 0, 0x04, 0, 0, 0, 0) // rlw: literals 2 (2<<33), run 0, bit 0
	b = append(b, 0, 0, 0, 0, 0, 0, 0, 0x09) // bits 0 and 3
	b = append(b, 0, 0, 0, 0, 0, 0, 0, 0x02) // bit 65
	b = append(b, 0, 0, 0, 0)
	bits, n, err := collect(b, 10)
	if err != nil || n != len(b) || !slices.Equal(bits, []int{0, 3, 65}) {
		t.Errorf("ewahEach = %v, %d, %v", bits, n, err)
	}
	if n, err := ewahEach(b, nil); err != nil || n != len(b) {
		t.Errorf("measuring: %d, %v", n, err)
	}
	// A run of 2^32-1 words of ones stops where the callback stops it.
	huge := []byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 1, 0, 0, 0, 0x01, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0}
	if _, _, err := collect(huge, 1000); err == nil {
		t.Error("a huge run decoded without error")
	}
	if _, err := ewahEach(b[:20], nil); err == nil {
		t.Error("a truncated bitmap decoded without error")
	}
}

// A shared index rewritten in place (git does not check its hash), the index file
// untouched, is a change of the index: the gitlink it gains is checked, and the
// nested repository it names, which sets core.fsmonitor, is moved aside.
func TestWatchSharedIndexRewritten(t *testing.T) {
	requireGit(t)
	src := t.TempDir()
	git := func(env []string, args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = src
		cmd.Env = append(append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1"), env...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git(nil, "init", "-q")
	os.WriteFile(filepath.Join(src, "a.txt"), []byte("a"), 0o644)
	git(nil, "add", "a.txt")
	git(nil, "update-index", "--split-index")
	git([]string{"GIT_INDEX_FILE=" + filepath.Join(src, "other")}, "update-index", "--add", "--cacheinfo", "160000,"+strings.Repeat("1", 40)+",node_modules/lib")
	shared, _ := filepath.Glob(filepath.Join(src, ".git/sharedindex.*"))
	if len(shared) != 1 {
		t.Fatalf("shared indexes: %q", shared)
	}
	read := func(p string) string {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}

	f := newFixture(t)
	f.write(".git/index", read(filepath.Join(src, ".git/index")))
	sharedRel := ".git/" + filepath.Base(shared[0])
	f.write(sharedRel, read(shared[0]))
	f.repo("node_modules/lib/.git", "[core]\n\tfsmonitor = touch /tmp/pwned\n")
	w := f.start()
	// Rewritten in place: the same name, the index file not touched.
	fd, err := os.OpenFile(f.path(sharedRel), os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fd.WriteString(read(filepath.Join(src, "other"))); err != nil {
		t.Fatal(err)
	}
	fd.Close()
	w.Stop()
	if f.exists("node_modules/lib/.git") || !f.warned("node_modules/lib/.git", "core.fsmonitor") {
		t.Fatalf("the gitlink the shared index gained was not checked: %q", f.warns)
	}
}

// An index git would follow to a file the watch does not read (a symlink) is moved
// aside, the link itself, never what it points to.
func TestWatchIndexSymlink(t *testing.T) {
	f := newFixture(t)
	f.write("elsewhere/idx", "DIRC")
	w := f.start()
	if err := os.Symlink("../elsewhere/idx", f.path(".git/index")); err != nil {
		t.Fatal(err)
	}
	w.Stop()
	if f.exists(".git/index") || !f.exists("elsewhere/idx") || !f.warned(".git/index", "git reset") {
		t.Fatalf("the linked index was not moved aside: %q", f.warns)
	}
}

// A path longer than the reader's buffer is read whole; one past maxIndexName is
// refused.
func TestReadIndexLongPath(t *testing.T) {
	entry := func(name string) []byte {
		e := make([]byte, 62)
		copy(e[24:], []byte{0, 0, 0xe0, 0}) // mode 160000
		e = append(e, name...)
		return append(e, make([]byte, (len(e)+8)&^7-len(e))...)
	}
	index := func(names ...string) []byte {
		b := []byte{'D', 'I', 'R', 'C', 0, 0, 0, 2, 0, 0, 0, byte(len(names))}
		for _, n := range names {
			b = append(b, entry(n)...)
		}
		return append(b, make([]byte, 20)...)
	}
	long := strings.Repeat("d/", 50_000) + "lib"
	b := index(long, "vendor/x")
	got, err := gitlinks(b, 20)
	if err != nil || len(got) != 2 || got[0] != long || got[1] != "vendor/x" {
		t.Errorf("a %d-byte path: %d gitlinks, %v", len(long), len(got), err)
	}
	if _, err := gitlinks(index(strings.Repeat("x", maxIndexName+1)), 20); err == nil {
		t.Error("a path over maxIndexName read without error")
	}
}
