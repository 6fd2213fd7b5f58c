package isolator_test

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/devsandbox/devsandbox/isolator"
)

// openLab is a project bound at its host path and, outside the view, a secret; the
// project's sub/a.txt is what the harness means to read.
type openLab struct {
	src, secretDir, sub string
	view                *isolator.View
}

func newOpenLab(t *testing.T) *openLab {
	t.Helper()
	root := t.TempDir()
	l := &openLab{src: filepath.Join(root, "proj"), secretDir: filepath.Join(root, "home", ".ssh")}
	l.sub = filepath.Join(l.src, "sub")
	for dir, files := range map[string]map[string]string{
		l.sub:       {"a.txt": "project file\n"},
		l.secretDir: {"a.txt": "HOST SECRET\n"},
		l.src:       {".env": "MASKED=1\n"},
	} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for n, c := range files {
			if err := os.WriteFile(filepath.Join(dir, n), []byte(c), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	p := &isolator.Plan{
		User: isolator.User{HostHome: filepath.Join(root, "home")},
		Mounts: []isolator.Mount{
			{Kind: isolator.Bind, Source: l.src, Dest: l.src, Why: "project"},
			{Kind: isolator.MaskFile, Dest: filepath.Join(l.src, ".env"), Why: "sandbox.mask_files"},
		},
		Tmp: isolator.Tmp{Kind: "tmpfs"},
	}
	l.view = isolator.NewView(p)
	return l
}

// swap is the sandboxed agent's move: the checked directory sub becomes a symlink to
// a host directory the view does not show.
func (l *openLab) swap(t *testing.T) {
	t.Helper()
	if err := os.Rename(l.sub, l.sub+".old"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(l.secretDir, l.sub); err != nil {
		t.Fatal(err)
	}
}

// read opens name through the view and returns its content.
func (l *openLab) read(name string) (string, error) {
	f, err := l.view.Open(name, os.O_RDONLY, 0)
	if err != nil {
		return "", err
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	return string(b), err
}

// TestViewOpenSwappedDir is the attack on a harness's file tool: the sandbox, running
// meanwhile, swaps a directory of a checked path for a symlink to a host directory
// outside the view after the check has looked at it. Before View.Open, the View's
// documentation had the harness check, take HostPath and open it with O_NOFOLLOW,
// which guards only the last component: that read "HOST SECRET".
func TestViewOpenSwappedDir(t *testing.T) {
	l := newOpenLab(t)
	name := filepath.Join(l.sub, "a.txt")
	if got, err := l.read(name); err != nil || got != "project file\n" {
		t.Fatalf("Open(%s) before the swap = %q, %v; want the project file", name, got, err)
	}
	swapped := false
	l.view.Readlink = func(p string) (string, error) {
		target, err := os.Readlink(p)
		if p == l.sub && !swapped { // the check saw a directory: now the sandbox moves
			swapped = true
			l.swap(t)
		}
		return target, err
	}
	got, err := l.read(name)
	if !swapped {
		t.Fatal("the check never looked at sub: the attack did not run")
	}
	if err == nil {
		t.Fatalf("Open(%s) after the swap read %q, want an error", name, got)
	}
	if !errors.Is(err, isolator.ErrOutsideView) {
		t.Errorf("Open(%s) after the swap = %v, want ErrOutsideView", name, err)
	}
	t.Logf("Open after the swap: %v", err)
	// Checked again, the view resolves the link in the sandbox's namespace: the
	// target names no host file (below /tmp, the sandbox's own; else not visible).
	if h, err := l.view.HostPath(name); err == nil {
		t.Errorf("HostPath(%s) after the swap = %s, want an error", name, h)
	}
}

// TestViewOpenWriteSwappedDir: the same swap, for a write that creates a file. The
// harness must not create it in the host directory the link leads to.
func TestViewOpenWriteSwappedDir(t *testing.T) {
	l := newOpenLab(t)
	name := filepath.Join(l.sub, "new.txt")
	swapped := false
	l.view.Readlink = func(p string) (string, error) {
		target, err := os.Readlink(p)
		if p == l.sub && !swapped {
			swapped = true
			l.swap(t)
		}
		return target, err
	}
	f, err := l.view.Open(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err == nil {
		f.Close()
		t.Errorf("Open(%s, O_CREATE) after the swap succeeded, want an error", name)
	}
	if _, err := os.Lstat(filepath.Join(l.secretDir, "new.txt")); err == nil {
		t.Errorf("the harness created new.txt in %s, outside the view", l.secretDir)
	}
}

// TestViewOpenMaskAlias: a second name for a masked file (a hard link; on a
// case-insensitive file system, another spelling) passes the check, which compares
// names, but not Open, which compares the file; O_TRUNC leaves it whole.
func TestViewOpenMaskAlias(t *testing.T) {
	l := newOpenLab(t)
	alias := filepath.Join(l.src, "env-copy")
	if err := os.Link(filepath.Join(l.src, ".env"), alias); err != nil {
		t.Fatal(err)
	}
	if got, err := l.read(alias); !errors.Is(err, isolator.ErrMasked) {
		t.Errorf("Open(%s) = %q, %v; want ErrMasked", alias, got, err)
	}
	f, err := l.view.Open(alias, os.O_WRONLY|os.O_TRUNC, 0)
	if err == nil {
		f.Close()
	}
	if !errors.Is(err, isolator.ErrMasked) {
		t.Errorf("Open(%s, O_TRUNC) = %v, want ErrMasked", alias, err)
	}
	if b, _ := os.ReadFile(alias); string(b) != "MASKED=1\n" {
		t.Errorf("the masked file holds %q after a refused O_TRUNC", b)
	}
	if _, err := l.read(filepath.Join(l.src, ".env")); !errors.Is(err, isolator.ErrMasked) {
		t.Errorf("Open(.env) = %v, want ErrMasked", err)
	}
}

// TestViewOpenFIFO: a FIFO the sandbox made where the harness reads is refused at
// once; os.Open would wait for a writer the sandbox controls.
func TestViewOpenFIFO(t *testing.T) {
	l := newOpenLab(t)
	fifo := filepath.Join(l.sub, "pipe")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := l.read(fifo); !errors.Is(err, isolator.ErrSpecialFile) {
		t.Errorf("Open(fifo) = %v, want ErrSpecialFile", err)
	}
}

// TestViewOpenWrites: Open follows the view for writing: a new file in the project
// is created, a masked or read-only one is refused, a symlink inside the view is
// followed as in the sandbox.
func TestViewOpenWrites(t *testing.T) {
	l := newOpenLab(t)
	if err := os.Symlink("sub", filepath.Join(l.src, "in")); err != nil {
		t.Fatal(err)
	}
	f, err := l.view.Open(filepath.Join(l.src, "in", "b.txt"), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("new"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if b, err := os.ReadFile(filepath.Join(l.sub, "b.txt")); err != nil || string(b) != "new" {
		t.Errorf("sub/b.txt = %q, %v; want \"new\"", b, err)
	}
	if _, err := l.view.Open(filepath.Join(l.src, ".env"), os.O_WRONLY|os.O_TRUNC, 0); !errors.Is(err, isolator.ErrMasked) {
		t.Errorf("Open(.env, O_WRONLY) = %v, want ErrMasked", err)
	}
	if _, err := l.view.Open("/etc/passwd", os.O_RDONLY, 0); !errors.Is(err, isolator.ErrOutsideView) {
		t.Errorf("Open(/etc/passwd) = %v, want ErrOutsideView", err)
	}
	d, err := l.view.Open(l.sub, os.O_RDONLY, 0)
	if err != nil {
		t.Fatalf("Open(sub) = %v, want the directory", err)
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil || len(names) != 2 {
		t.Errorf("Readdirnames(sub) = %v, %v; want a.txt and b.txt", names, err)
	}
}

// TestViewOpenMaskedAndShown: a second bind showing a masked file's directory under
// another path is refused for that file, and a file a later mount shows below a
// masked directory, at its own path, is opened (the check decided it).
func TestViewOpenMaskedAndShown(t *testing.T) {
	root := t.TempDir()
	src := filepath.Join(root, "proj")
	if err := os.MkdirAll(filepath.Join(src, "keys"), 0o755); err != nil {
		t.Fatal(err)
	}
	for n, c := range map[string]string{".env": "MASKED=1\n", "keys/pub": "public\n", "keys/priv": "private\n"} {
		if err := os.WriteFile(filepath.Join(src, n), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p := &isolator.Plan{
		User: isolator.User{HostHome: filepath.Join(root, "home")},
		Mounts: []isolator.Mount{
			{Kind: isolator.Bind, Source: src, Dest: src, Why: "project"},
			{Kind: isolator.Bind, Source: src, Dest: "/alias", ReadOnly: true, Why: "sandbox.ro_binds"},
			{Kind: isolator.MaskFile, Dest: filepath.Join(src, ".env"), Why: "sandbox.mask_files"},
			{Kind: isolator.MaskDir, Dest: filepath.Join(src, "keys"), Why: "sandbox.hide_paths"},
			{Kind: isolator.Bind, Source: filepath.Join(src, "keys/pub"), Dest: filepath.Join(src, "keys/pub"), ReadOnly: true, Why: "tool"},
		},
		Tmp: isolator.Tmp{Kind: "tmpfs"},
	}
	v := isolator.NewView(p)
	for name, want := range map[string]error{
		"/alias/.env":                          isolator.ErrMasked,
		"/alias/keys/priv":                     isolator.ErrMasked,
		"/alias/keys/pub":                      isolator.ErrMasked,
		filepath.Join(src, "keys/pub"):         nil,
		filepath.Join(src, "keys/priv"):        isolator.ErrMasked,
		filepath.Join(src, "keys/pub/../priv"): isolator.ErrMasked,
	} {
		f, err := v.Open(name, os.O_RDONLY, 0)
		if err == nil {
			f.Close()
		}
		if (want == nil) != (err == nil) || want != nil && !errors.Is(err, want) {
			t.Errorf("Open(%s) = %v, want %v", name, err, want)
		}
	}
}

// TestViewOpenAbsentBindSource: an optional bind whose host file is absent was not
// mounted, so in the sandbox the path is the sandbox home's. Open must not create the
// host file (a real home's tool config the host's tool would read).
func TestViewOpenAbsentBindSource(t *testing.T) {
	root := t.TempDir()
	home, sbHome := filepath.Join(root, "home"), filepath.Join(root, "sbhome")
	for _, d := range []string{home, sbHome} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	p := &isolator.Plan{
		User:        isolator.User{HostHome: home},
		SandboxHome: sbHome,
		Mounts: []isolator.Mount{
			{Kind: isolator.Bind, Source: sbHome, Dest: home, Why: "sandbox home"},
			{Kind: isolator.Bind, Source: filepath.Join(home, ".tool.json"), HomeRel: ".tool.json", Optional: true, Why: "tool tool"},
		},
		Tmp: isolator.Tmp{Kind: "tmpfs"},
	}
	f, err := isolator.NewView(p).Open(filepath.Join(home, ".tool.json"), os.O_WRONLY|os.O_CREATE, 0o644)
	if err == nil {
		f.Close()
		t.Error("Open(~/.tool.json, O_CREATE) of an absent optional bind's source succeeded, want an error")
	}
	if _, err := os.Lstat(filepath.Join(home, ".tool.json")); err == nil {
		t.Errorf("Open created the host's %s, which the sandbox never had", filepath.Join(home, ".tool.json"))
	}
}

// TestViewOpenMovedProtections: in its mount namespace the sandbox may rename a
// directory that holds a mask or a read-only mount (only a mount point itself is
// busy); the mounts move with it, so the sandbox still cannot read or write what they
// protect, but on the host the files are now under a name the view does not know.
// The harness must not become the sandbox's deputy: Open knows the files by identity,
// recorded when the View was made, before the sandbox ran.
func TestViewOpenMovedProtections(t *testing.T) {
	root := t.TempDir()
	src := filepath.Join(root, "proj")
	conf := filepath.Join(src, "conf")
	if err := os.MkdirAll(filepath.Join(conf, "hooks"), 0o755); err != nil {
		t.Fatal(err)
	}
	for n, c := range map[string]string{".env": "MASKED=1\n", "hooks/pre-commit": "#!/bin/sh\n", "config": "[core]\n"} {
		if err := os.WriteFile(filepath.Join(conf, n), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p := &isolator.Plan{
		User: isolator.User{HostHome: filepath.Join(root, "home")},
		Mounts: []isolator.Mount{
			{Kind: isolator.Bind, Source: src, Dest: src, Why: "project"},
			{Kind: isolator.Bind, Source: filepath.Join(conf, "hooks"), Dest: filepath.Join(conf, "hooks"), ReadOnly: true, Why: "git hooks"},
			{Kind: isolator.Bind, Source: filepath.Join(conf, "config"), Dest: filepath.Join(conf, "config"), ReadOnly: true, Why: "git config"},
			{Kind: isolator.MaskFile, Dest: filepath.Join(conf, ".env"), Why: "sandbox.mask_files"},
		},
		Tmp: isolator.Tmp{Kind: "tmpfs"},
	}
	v := isolator.NewView(p)
	moved := filepath.Join(src, "moved")
	if err := os.Rename(conf, moved); err != nil { // the sandbox's rename, as the host sees it
		t.Fatal(err)
	}
	if got, err := (&openLab{view: v}).read(filepath.Join(moved, ".env")); !errors.Is(err, isolator.ErrMasked) {
		t.Errorf("Open(moved/.env) = %q, %v; want ErrMasked", got, err)
	}
	for _, n := range []string{"hooks/pre-commit", "hooks/post-checkout", "config"} {
		f, err := v.Open(filepath.Join(moved, n), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o755)
		if err == nil {
			f.Close()
		}
		if !errors.Is(err, isolator.ErrReadOnly) {
			t.Errorf("Open(moved/%s, O_WRONLY) = %v, want ErrReadOnly", n, err)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(moved, "hooks/pre-commit")); string(b) != "#!/bin/sh\n" {
		t.Errorf("the read-only hook holds %q", b)
	}
	if _, err := os.Lstat(filepath.Join(moved, "hooks/post-checkout")); err == nil {
		t.Error("Open created a hook in the read-only hooks directory")
	}
	// Reading what a read-only mount shows is allowed under any name.
	if got, err := (&openLab{view: v}).read(filepath.Join(moved, "config")); err != nil || got != "[core]\n" {
		t.Errorf("Open(moved/config) for reading = %q, %v; want the config", got, err)
	}
	// A View made after the rename finds nothing at conf/ to record: it cannot know
	// the moved files (documented: make the View before the sandbox starts; a Plan of
	// planner.Build anchors the directories on the way, so the rename fails there,
	// bwrap's TestSessionMovedProtections).
	got, err := (&openLab{view: isolator.NewView(p)}).read(filepath.Join(moved, ".env"))
	t.Logf("a View made after the rename: Open(moved/.env) = %q, %v", got, err)
}
