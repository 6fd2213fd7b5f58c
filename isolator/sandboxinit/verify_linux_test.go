package sandboxinit

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/devsandbox/devsandbox/isolator/sandboxinit/wire"
)

// Each check fails closed on what Docker can silently get wrong: a mask that is not
// empty, a directory with unexpected entries, a file of the wrong size, a read-only
// mount that is writable.
func TestVerifyCheckFailsClosed(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	empty := write("empty", "")
	full := write("full", "TOKEN=x\n")
	masked := filepath.Join(dir, "masked")
	write("masked/config", "")
	write("masked/id_rsa", "key")
	tests := []struct {
		check wire.Check
		want  string // substring of the error; "" = passes
	}{
		{wire.Check{Kind: wire.CheckMaskFile, Path: full}, "not an empty file"},
		{wire.Check{Kind: wire.CheckMaskFile, Path: empty}, "writable but must be read-only"},
		{wire.Check{Kind: wire.CheckMaskFile, Path: filepath.Join(dir, "missing")}, "missing"},
		// A host service's socket gone before the command starts: nothing to mask.
		{wire.Check{Kind: wire.CheckMaskFile, Path: filepath.Join(dir, "missing"), MayVanish: true}, ""},
		{wire.Check{Kind: wire.CheckMaskFile, Path: full, MayVanish: true}, "not an empty file"},
		{wire.Check{Kind: wire.CheckMaskDir, Path: masked, Allow: []string{"config"}}, `"id_rsa"`},
		{wire.Check{Kind: wire.CheckMaskDir, Path: masked, Allow: []string{"config", "id_rsa"}}, "writable but must be read-only"},
		{wire.Check{Kind: wire.CheckData, Path: full, Size: 3}, "not a file of 3 bytes"},
		{wire.Check{Kind: wire.CheckRO, Path: dir}, "writable but must be read-only"},
		{wire.Check{Kind: wire.CheckRW, Path: dir}, ""},
		{wire.Check{Kind: "bogus", Path: dir}, "unknown check"},
	}
	for _, tt := range tests {
		err := verifyCheck(tt.check, false)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%+v: %v", tt.check, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%+v: error %v, want one holding %q", tt.check, err, tt.want)
		}
	}
}

// Where statfs cannot see read-only mounts (krun), a writable path still fails: the
// probe's chmod succeeds.
func TestReadOnlyProbe(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "f")
	if err := os.WriteFile(f, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := verifyCheck(wire.Check{Kind: wire.CheckRO, Path: f}, false); !errors.Is(err, errWritable) {
		t.Fatalf("verifyCheck: %v", err)
	}
	if readOnlyByProbe(f) || readOnlyByProbe(dir) || readOnlyByProbe(filepath.Join(dir, "missing")) {
		t.Error("a writable path passed the read-only probe")
	}
	if fi, _ := os.Stat(f); fi.Mode().Perm() != 0o644 {
		t.Errorf("the probe changed the mode to %v", fi.Mode())
	}
}

// Secret files are written 0400 and replaced atomically; a bad name is refused.
func TestWriteSecretFiles(t *testing.T) {
	dir := t.TempDir()
	files := map[string][]byte{"DB_PASS": []byte("one")}
	if err := writeSecretFiles(dir, files); err != nil {
		t.Fatal(err)
	}
	files["DB_PASS"] = []byte("second value")
	if err := writeSecretFiles(dir, files); err != nil {
		t.Fatalf("rewriting a 0400 file: %v", err)
	}
	fi, err := os.Stat(filepath.Join(dir, "DB_PASS"))
	if err != nil || fi.Mode().Perm() != 0o400 || fi.Size() != int64(len("second value")) {
		t.Fatalf("secret file: %v %v", fi, err)
	}
	if err := writeSecretFiles(dir, map[string][]byte{"../x": nil}); err == nil {
		t.Fatal("a name with a slash was accepted")
	}
}

// A secret file is written over whatever an earlier session of a kept container left
// at its name: a link (replaced, what it names untouched) or a directory, however
// locked (removed, following no link in it).
func TestWriteSecretFilesOverPlanted(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "keep"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "keep"), filepath.Join(dir, "LINKED")); err != nil {
		t.Fatal(err)
	}
	planted := filepath.Join(dir, "TOKEN")
	if err := os.MkdirAll(filepath.Join(planted, "d", "locked"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(planted, "d", "locked", "f"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(planted, "d", "out")); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{filepath.Join(planted, "d", "locked"), filepath.Join(planted, "d"), planted} {
		if err := os.Chmod(d, 0o500); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(filepath.Join(planted, "d", "locked"), 0); err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{"TOKEN": []byte("value"), "LINKED": []byte("other")}
	if err := writeSecretFiles(dir, files); err != nil {
		t.Fatalf("writing over a planted directory and link: %v", err)
	}
	for name, want := range files {
		if fi, err := os.Lstat(filepath.Join(dir, name)); err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o400 || fi.Size() != int64(len(want)) {
			t.Errorf("secret file %s: %v %v", name, fi, err)
		}
	}
	if b, err := os.ReadFile(filepath.Join(outside, "keep")); err != nil || string(b) != "x" {
		t.Errorf("the file a planted link named: %q %v", b, err)
	}
	if ents, err := os.ReadDir(dir); err != nil || len(ents) != 2 {
		t.Errorf("the secret directory holds %v (%v), want the two files alone", ents, err)
	}
}

// A pinned source must be reached without a symlink and, on the host's kernel, be the
// very file the host opened, as the root of a mount.
func TestVerifyIdentity(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real")
	other := filepath.Join(dir, "other")
	for _, d := range []string{real, other} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("other", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	id := func(p string) (uint64, uint64) {
		var st unix.Stat_t
		if err := unix.Stat(p, &st); err != nil {
			t.Fatal(err)
		}
		return uint64(st.Dev), st.Ino
	}
	dev, ino := id(real)
	pdev, pino := id("/proc")
	tests := []struct {
		path     string
		dev, ino uint64
		same     bool
		want     string
	}{
		{"/proc", pdev, pino, true, ""}, // a mount's root, the file pinned
		{real, dev, ino, true, "not a mount point"},
		{other, dev, ino, true, "not the file devsandbox opened"},
		{other, dev, ino, false, ""}, // another kernel: numbers are not compared
		{filepath.Join(dir, "link"), dev, ino, false, "without following a symlink"},
	}
	for _, tt := range tests {
		var st unix.Stat_t
		fd, err := verifyIdentity(wire.Check{Kind: wire.CheckRW, Path: tt.path, Dev: tt.dev, Ino: tt.ino}, tt.same, &st)
		if (tt.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("%s (same kernel %v): %v, want %q", tt.path, tt.same, err, tt.want)
		}
		if err == nil {
			if fd < 0 || st.Ino != func() uint64 { _, i := id(tt.path); return i }() {
				t.Errorf("%s: descriptor %d, stat of inode %d: not the path's file", tt.path, fd, st.Ino)
			}
			unix.Close(fd)
		}
	}
	if !sameKernel(strings.TrimSpace(readFile(t, "/proc/sys/kernel/random/boot_id"))) || sameKernel("") {
		t.Error("sameKernel does not recognise this kernel's boot id")
	}
}

// openNoFollow reaches a path through real directories only, by openat2 and by the
// walk it falls back to: a symlink on the way or at the end, "..", or "/" fails; the
// descriptors it returns are the path's file and the directory it was opened from.
func TestOpenNoFollow(t *testing.T) {
	dir := t.TempDir()
	sub := filepath.Join(dir, "a", "b")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(sub, "f")
	if err := os.WriteFile(f, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("a", filepath.Join(dir, "la")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("f", filepath.Join(sub, "lf")); err != nil {
		t.Fatal(err)
	}
	ino := func(fd int) uint64 {
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			t.Fatal(err)
		}
		return st.Ino
	}
	pathIno := func(p string) uint64 {
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			t.Fatal(err)
		}
		return st.Ino
	}
	split := func(p string) []string { return strings.Split(strings.Trim(p, "/"), "/") }
	opens := map[string]func(string) (int, int, error){
		"openNoFollow": openNoFollow,
		"openat2":      func(p string) (int, int, error) { return openNoFollow2(split(p)) },
		"walk":         func(p string) (int, int, error) { return openNoFollowWalk(split(p)) },
	}
	for name, open := range opens {
		fd, parent, err := open(f)
		if err != nil {
			if name == "openat2" && errors.Is(err, unix.ENOSYS) {
				continue // a kernel before 5.6
			}
			t.Fatalf("%s(%s): %v", name, f, err)
		}
		if ino(fd) != pathIno(f) || ino(parent) != pathIno(sub) {
			t.Errorf("%s(%s): descriptors of inodes %d and %d, want %d and %d", name, f, ino(fd), ino(parent), pathIno(f), pathIno(sub))
		}
		unix.Close(fd)
		unix.Close(parent)
		for _, bad := range []string{filepath.Join(dir, "la", "b", "f"), filepath.Join(sub, "lf")} {
			if fd, parent, err := open(bad); err == nil {
				unix.Close(fd)
				unix.Close(parent)
				t.Errorf("%s(%s) followed a symlink", name, bad)
			}
		}
	}
	if _, _, err := openNoFollow("/"); err == nil {
		t.Error(`openNoFollow("/") passed`)
	}
	if _, _, err := openNoFollow(sub + "/../b/f"); !errors.Is(err, unix.EINVAL) {
		t.Errorf("a path with ..: %v, want EINVAL", err)
	}
}

// A pinned path's read-only check is made on the file its identity check reached.
func TestVerifyCheckPinned(t *testing.T) {
	var st unix.Stat_t
	if err := unix.Stat("/proc", &st); err != nil {
		t.Fatal(err)
	}
	c := wire.Check{Kind: wire.CheckRO, Path: "/proc", Dev: uint64(st.Dev), Ino: st.Ino}
	if err := verifyCheck(c, true); !errors.Is(err, errWritable) {
		t.Errorf("a writable pinned mount: %v, want errWritable", err)
	}
	c.Kind = wire.CheckRW
	if err := verifyCheck(c, true); err != nil {
		t.Errorf("a pinned mount: %v", err)
	}
	c.Ino++
	if err := verifyCheck(c, true); err == nil || !strings.Contains(err.Error(), "not the file devsandbox opened") {
		t.Errorf("another inode: %v", err)
	}
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A sealed file (the init, copied in by the engine) passes only when neither it nor a
// directory above it is the caller's or writable by others.
func TestVerifySealed(t *testing.T) {
	bin, err := filepath.EvalSymlinks("/bin/sh")
	if err != nil {
		t.Skip(err)
	}
	if fi, err := os.Stat(bin); err != nil || fi.Mode()&0o022 != 0 {
		t.Skipf("%s: %v %v", bin, fi, err)
	}
	const other = 54321
	if err := verifySealed(bin, other); err != nil {
		t.Errorf("%s for uid %d: %v", bin, other, err)
	}
	var st unix.Stat_t
	_ = unix.Stat(bin, &st)
	owner := int(st.Uid)
	if err := verifySealed(bin, owner); !errors.Is(err, errUnsealed) {
		t.Errorf("%s for its owner: %v, want errUnsealed", bin, err)
	}
	dir := t.TempDir() // below a sticky, world-writable /tmp
	f := filepath.Join(dir, "init")
	os.WriteFile(f, nil, 0o555)
	if err := verifySealed(f, other); !errors.Is(err, errUnsealed) {
		t.Errorf("a file below a world-writable directory: %v, want errUnsealed", err)
	}
	link := filepath.Join(dir, "link")
	os.Symlink(bin, link)
	if err := verifySealed(link, other); !errors.Is(err, errUnsealed) {
		t.Errorf("a symlink: %v, want errUnsealed", err)
	}
	if err := verifyCheck(wire.Check{Kind: wire.CheckSealed, Path: filepath.Join(dir, "missing")}, false); err == nil {
		t.Error("a missing sealed file passed")
	}
}

// A mask the init cannot list passes only as a tmpfs of its own holding nothing but
// the allowed names; a directory that is not one fails.
func TestEmptyUnlistedNotATmpfs(t *testing.T) {
	dir := t.TempDir()
	if err := emptyUnlisted(dir, nil); err == nil || !strings.Contains(err.Error(), "cannot be listed") {
		t.Fatalf("a plain directory passed: %v", err)
	}
}

// Sessions of a kept container write the same secret files into the one secret
// tmpfs at once (docker.lock serialises them only for a while): each write succeeds,
// and each file ends whole, one session's value.
func TestWriteSecretFilesConcurrent(t *testing.T) {
	dir := t.TempDir()
	values := []string{"a", "bb", "ccc", "dddd", "eeeee", "ffffff", "ggggggg", "hhhhhhhh"}
	for round := range 50 {
		var wg sync.WaitGroup
		errs := make([]error, len(values))
		for i, v := range values {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = writeSecretFiles(dir, map[string][]byte{"TOKEN": []byte(strings.Repeat(v, 64))})
			}()
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("round %d, session %d: %v", round, i, err)
			}
		}
		b, err := os.ReadFile(filepath.Join(dir, "TOKEN"))
		if err != nil || !slices.Contains(values, strings.Repeat(string(b[:1]), len(b)/64)) || len(b)%64 != 0 || strings.Count(string(b), string(b[:1])) != len(b) {
			t.Fatalf("round %d: the file holds %q (%v); want one session's value", round, b, err)
		}
	}
	if names, _ := filepath.Glob(filepath.Join(dir, ".*")); len(names) != 0 {
		t.Errorf("temporary files left: %v", names)
	}
}

// The container's root is the host's only where the init's user namespace maps uid 0
// to the host's uid 0 (the initial namespace, a rootful engine's container); a
// rootless engine's maps it to the user.
func TestHostRoot(t *testing.T) {
	for _, tc := range []struct {
		uidMap string
		want   bool
	}{
		{"         0          0 4294967295\n", true},
		{"         0       1000          1\n         1     100000      65536\n", false},
		{"         1     100000      65536\n         0       1000          1\n", false},
		{"         0          0          1\n         1     100000      65536\n", true},
		{"", true},
		{"0 x 1\n", true},
	} {
		if got := hostRoot(tc.uidMap); got != tc.want {
			t.Errorf("hostRoot(%q) = %v, want %v", tc.uidMap, got, tc.want)
		}
	}
}

// VerifySession refuses a secret file that is not the user's own 0400 regular file of
// the expected size, whoever wrote it: the container init (writeSecretFiles) or bwrap
// (--perms 0400 --ro-bind-data), whose --perms an older bubblewrap ignores.
func TestVerifySessionSecretFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "secrets")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	m := &wire.Manifest{SecretDir: dir}
	files := map[string][]byte{"DB_PASS": []byte("s3cret")}
	if err := writeSecretFiles(dir, files); err != nil {
		t.Fatal(err)
	}
	if err := VerifySession(m, files); err != nil {
		t.Fatalf("a 0400 secret file of the user was refused: %v", err)
	}
	p := filepath.Join(dir, "DB_PASS")
	for _, mode := range []uint32{0o444, 0o404, 0o440, 0o600, 0o4400} {
		if err := unix.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		if err := VerifySession(m, files); err == nil || !strings.Contains(err.Error(), "is not a 0400 file") {
			t.Errorf("secret file of mode %o: VerifySession = %v, want a refusal", mode, err)
		}
	}
	if err := os.Chmod(p, 0o400); err != nil {
		t.Fatal(err)
	}
	if os.Getuid() == 0 {
		if err := os.Lchown(p, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		if err := VerifySession(m, files); err == nil || !strings.Contains(err.Error(), "is not a 0400 file") {
			t.Errorf("secret file of another user: VerifySession = %v, want a refusal", err)
		}
	}
}
