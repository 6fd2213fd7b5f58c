package watch

import (
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
	ix, err := readIndex(b, 20)
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
	sh, err := readIndex(sb, 20)
	if err != nil {
		t.Fatal(err)
	}
	got := splitGitlinks(ix, sh)
	slices.Sort(got)
	if !ix.replaceKnown || strings.Join(got, " ") != "a.txt vendor/x" {
		t.Errorf("gitlinks of the split index: %q (replace bitmap read: %v)", got, ix.replaceKnown)
	}
	// Without a replace bitmap to say which entry is replaced, every shared path counts.
	ix.replaceKnown = false
	got = splitGitlinks(ix, sh)
	slices.Sort(got)
	if strings.Join(got, " ") != "a.txt b.txt dir/c.txt vendor/x vendor/x" {
		t.Errorf("gitlinks with the replace bitmap unknown: %q", got)
	}
}

func TestEwahBits(t *testing.T) {
	// 130 bits: a run-length word (no run, 2 literal words), bits 0, 3 and 64+1.
	b := []byte{0, 0, 0, 130, 0, 0, 0, 3}
	b = append(b, 0, 0, 0, 0x04, 0, 0, 0, 0) // rlw: literals 2 (2<<33), run 0, bit 0
	b = append(b, 0, 0, 0, 0, 0, 0, 0, 0x09) // bits 0 and 3
	b = append(b, 0, 0, 0, 0, 0, 0, 0, 0x02) // bit 65
	b = append(b, 0, 0, 0, 0)
	bits, n, err := ewahBits(b, 10)
	if err != nil || n != len(b) || !slices.Equal(bits, []int{0, 3, 65}) {
		t.Errorf("ewahBits = %v, %d, %v", bits, n, err)
	}
	if _, _, err := ewahBits(b, 2); err == nil {
		t.Error("more set bits than the limit decoded without error")
	}
	// A run of 2^32-1 words of ones stops at the limit, not after 2^38 bits.
	huge := []byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 1, 0, 0, 0, 0x01, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0}
	if _, _, err := ewahBits(huge, 1000); err == nil {
		t.Error("a huge run decoded without error")
	}
	if _, _, err := ewahBits(b[:20], 10); err == nil {
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
