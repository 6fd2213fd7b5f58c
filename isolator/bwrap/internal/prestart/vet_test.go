package prestart

import (
	"errors"
	"path"
	"slices"
	"testing"
)

const stateRoot = "/home/u/.local/state/devsandbox"

// baseRecord is a record as devsandbox writes it for a project launched before: the
// /etc snapshot, the sandbox home, the project and its hooks by descriptor, a mask,
// the ssh tool's config in its masked directory, a secret file.
func baseRecord() *Record {
	return &Record{
		Version: Version,
		Key:     "0123456789abcdef0123456789abcdef",
		Bwrap:   "/usr/bin/bwrap",
		TmpBase: stateRoot + "/app-1/tmp",
		Argv: []string{"bwrap", "--unshare-all", "--share-net", "--die-with-parent", "--new-session",
			"--cap-drop", "ALL", "--unshare-user", "--disable-userns",
			"--ro-bind-try", "/usr", "/usr", "--symlink", "usr/bin", "/bin",
			"--ro-bind-fd", "5", "/etc",
			"--dev", "/dev", "--proc", "/proc", "--tmpfs", "/run",
			"--bind", stateRoot + "/app-1/tmp/<session>", "/tmp",
			"--bind-fd", "6", "/home/u",
			"--bind-fd", "7", "/home/u/src/app",
			"--ro-bind-fd", "8", "/home/u/src/app/.git/hooks",
			"--ro-bind", stateRoot + "/empty", "/home/u/src/app/.env",
			"--tmpfs", "/home/u/.ssh",
			"--perms", "0444", "--file", "9", "/home/u/.ssh/config",
			"--perms", "0400", "--ro-bind-data", "10", "/run/secrets/API_KEY",
			"--remount-ro", "/home/u/.ssh", "--remount-ro", "/",
			"--seccomp", "11", "--as-pid-1",
			"--ro-bind", "/usr/local/bin/devsandbox", "/run/devsandbox/init",
			"--chdir", "/home/u/src/app",
			"--", "/run/devsandbox/init", "--ready-fd=3", "--", "bash", "-l"},
		Env: []Env{
			{Name: "HOME", Kind: EnvPlain, Value: "/home/u"},
			{Name: "TERM", Kind: EnvHost},
			{Name: "API_KEY", Kind: EnvSecret, Source: "HOST_API_KEY"},
			{Name: "GOMAXPROCS", Kind: EnvPlain, Value: "1"},
		},
		Files: []File{
			{FD: 5, Kind: KindSource, Path: stateRoot + "/app-1/etc"},
			{FD: 6, Kind: KindSource, Path: "/home/u/.local/share/devsandbox/app-1/home"},
			{FD: 7, Kind: KindSource, Path: "/home/u/src/app"},
			{FD: 8, Kind: KindSource, Path: "/home/u/src/app/.git/hooks"},
			{FD: 9, Kind: KindData},
			{FD: 10, Kind: KindData},
			{FD: 11, Kind: KindSeccomp},
		},
	}
}

// fakeHost has the files of present (host paths), none of them reached through a
// link but those of links.
type fakeHost struct {
	present map[string]bool
	links   map[string]bool
	files   map[int]string // descriptor sources
}

func newFakeHost(r *Record) *fakeHost {
	h := &fakeHost{present: map[string]bool{}, links: map[string]bool{}, files: map[int]string{}}
	for _, p := range []string{
		"/", "/usr", "/home/u", "/home/u/.ssh", "/home/u/src/app", "/home/u/src/app/.env",
		"/home/u/src/app/.git/hooks", "/home/u/.local/share/devsandbox/app-1/home/.ssh",
		"/home/u/.local/share/devsandbox/app-1/home/src/app", stateRoot + "/empty",
	} {
		h.present[p] = true
	}
	for _, f := range r.Files {
		h.files[f.FD] = f.Path
	}
	return h
}

func (h *fakeHost) Present(src Source, rel string) (bool, error) {
	base := src.Path
	if src.FD > 0 {
		base = h.files[src.FD]
	}
	if rel == "." {
		return true, nil // the bind's source, opened by the early start or by bwrap
	}
	p := path.Join(base, rel)
	for q := p; q != "/" && q != "."; q = path.Dir(q) {
		if h.links[q] && len(q) >= len(base) {
			return false, errors.New("a symbolic link on the way")
		}
	}
	return h.present[p], nil
}

// insert puts words before the record's --seccomp.
func insert(r *Record, words ...string) {
	i := slices.Index(r.Argv, "--seccomp")
	r.Argv = slices.Insert(r.Argv, i, words...)
}

// addSource adds descriptor fd with the source path.
func addSource(r *Record, fd int, p string) {
	r.Files = append(r.Files, File{FD: fd, Kind: KindSource, Path: p})
}

func TestVetAdmitsDevsandboxRecord(t *testing.T) {
	r := baseRecord()
	if err := Vet(r, Expect{StateRoot: stateRoot}, newFakeHost(r)); err != nil {
		t.Fatal(err)
	}
}

// Forged records: each would change the host before bwrap reaches its block (the
// attacks bubblewrap 0.8.0 was shown to allow: a --file destination truncated, a
// --chmod and a --symlink through a read-write bind, a --dir), or is refused because
// it uses what devsandbox never renders.
func TestVetRefusesForgedRecords(t *testing.T) {
	cases := []struct {
		name string
		edit func(r *Record, h *fakeHost)
	}{
		{"--file truncates a host file through the sandbox home's bind", func(r *Record, _ *fakeHost) {
			r.Argv[slices.Index(r.Argv, "/home/u/.ssh/config")] = "/home/u/.bashrc"
		}},
		{"--file truncates ~/.profile through a read-write bind of the home", func(r *Record, _ *fakeHost) {
			insert(r, "--bind-fd", "12", "/mnt", "--perms", "0444", "--file", "13", "/mnt/.profile")
			addSource(r, 12, "/home/u")
			r.Files = append(r.Files, File{FD: 13, Kind: KindData})
		}},
		{"--chmod through a read-write bind", func(r *Record, _ *fakeHost) {
			insert(r, "--chmod", "0777", "/home/u/src/app/secret")
		}},
		{"--symlink planted as ~/.profile through a read-write bind", func(r *Record, _ *fakeHost) {
			insert(r, "--bind-fd", "12", "/mnt", "--symlink", "/home/u/src/app/evil", "/mnt/.profile")
			addSource(r, 12, "/home/u")
		}},
		{"--symlink in the sandbox home's bind", func(r *Record, _ *fakeHost) {
			insert(r, "--symlink", "/home/u/src/app/evil", "/home/u/.bashrc")
		}},
		{"--dir through a read-write bind", func(r *Record, _ *fakeHost) {
			insert(r, "--dir", "/home/u/src/app/planted")
		}},
		{"--dir in a tmpfs (never rendered)", func(r *Record, _ *fakeHost) {
			insert(r, "--dir", "/run/x")
		}},
		{"--bind-data", func(r *Record, _ *fakeHost) {
			r.Argv[slices.Index(r.Argv, "--ro-bind-data")] = "--bind-data"
		}},
		{"--file through a link the argv placed in the root tmpfs (absolute)", func(r *Record, _ *fakeHost) {
			insert(r, "--symlink", "/home/u/.ssh", "/x", "--perms", "0444", "--file", "12", "/x/authorized_keys")
			r.Files = append(r.Files, File{FD: 12, Kind: KindData})
		}},
		{"--tmpfs through a relative link the argv placed", func(r *Record, _ *fakeHost) {
			insert(r, "--symlink", "../../home/u", "/y", "--tmpfs", "/y/newdir")
		}},
		{"--file at a link the argv placed", func(r *Record, _ *fakeHost) {
			insert(r, "--symlink", "/home/u/.bashrc", "/z", "--file", "12", "/z")
			r.Files = append(r.Files, File{FD: 12, Kind: KindData})
		}},
		{"a read-write bind of / by path", func(r *Record, _ *fakeHost) {
			insert(r, "--bind", "/", "/mnt")
		}},
		{"a read-write bind of ~/.ssh by path", func(r *Record, _ *fakeHost) {
			insert(r, "--bind", "/home/u/.ssh", "/mnt")
		}},
		{"--bind-try by path", func(r *Record, _ *fakeHost) {
			insert(r, "--bind-try", "/home/u/.ssh", "/mnt")
		}},
		{"a read-write bind of ~/.ssh by descriptor, a file written into it", func(r *Record, _ *fakeHost) {
			insert(r, "--bind-fd", "12", "/mnt", "--file", "13", "/mnt/authorized_keys")
			addSource(r, 12, "/home/u/.ssh")
			r.Files = append(r.Files, File{FD: 13, Kind: KindData})
		}},
		{"/ bound over the home by descriptor, a mask dir missing in it", func(r *Record, _ *fakeHost) {
			insert(r, "--bind-fd", "12", "/home/u", "--tmpfs", "/home/u/.ssh")
			addSource(r, 12, "/")
		}},
		{"a mount point to create in the sandbox home", func(r *Record, _ *fakeHost) {
			insert(r, "--tmpfs", "/home/u/.newmask")
		}},
		{"a mask of a file absent from the project", func(r *Record, _ *fakeHost) {
			insert(r, "--ro-bind", stateRoot+"/empty", "/home/u/src/app/.env.new")
		}},
		{"a tmpfs later covered by a bind, then a file into it", func(r *Record, _ *fakeHost) {
			insert(r, "--tmpfs", "/w", "--bind-fd", "12", "/w", "--file", "13", "/w/.bashrc")
			addSource(r, 12, "/home/u")
			r.Files = append(r.Files, File{FD: 13, Kind: KindData})
		}},
		{"a tmpfs covered by a bind of its parent", func(r *Record, _ *fakeHost) {
			insert(r, "--tmpfs", "/v/t", "--bind-fd", "12", "/v", "--file", "13", "/v/t/f")
			addSource(r, 12, "/home/u")
			r.Files = append(r.Files, File{FD: 13, Kind: KindData})
		}},
		{"a mount point reached through a host link", func(r *Record, h *fakeHost) {
			h.links["/home/u/src/app/docs"] = true
			h.present["/home/u/src/app/docs/x"] = true
			insert(r, "--tmpfs", "/home/u/src/app/docs/x")
		}},
		{"a tmpfs below /dev (its links lead to the host)", func(r *Record, _ *fakeHost) {
			insert(r, "--tmpfs", "/dev/fd/7/x")
		}},
		{"a file below /proc (its magic links lead to the host)", func(r *Record, _ *fakeHost) {
			insert(r, "--file", "12", "/proc/self/fd/6/.bashrc")
			r.Files = append(r.Files, File{FD: 12, Kind: KindData})
		}},
		{"an unclean destination", func(r *Record, _ *fakeHost) {
			insert(r, "--file", "12", "/run/../home/u/.bashrc")
			r.Files = append(r.Files, File{FD: 12, Kind: KindData})
		}},
		{"a relative destination", func(r *Record, _ *fakeHost) {
			insert(r, "--tmpfs", "home/u/x")
		}},
		{"--dev-bind", func(r *Record, _ *fakeHost) { insert(r, "--dev-bind", "/dev/sda", "/dev/sda") }},
		{"the early start's own --block-fd", func(r *Record, _ *fakeHost) { insert(r, "--block-fd", "9") }},
		{"--setenv", func(r *Record, _ *fakeHost) { insert(r, "--setenv", "LD_PRELOAD", "/tmp/x.so") }},
		{"--cap-add", func(r *Record, _ *fakeHost) { insert(r, "--cap-add", "ALL") }},
		{"--cap-drop of less than all", func(r *Record, _ *fakeHost) {
			r.Argv[slices.Index(r.Argv, "ALL")] = "CAP_SYS_ADMIN"
		}},
		{"--perms beyond 0777", func(r *Record, _ *fakeHost) {
			r.Argv[slices.Index(r.Argv, "0444")] = "04755"
		}},
		{"a word that is no option", func(r *Record, _ *fakeHost) { insert(r, "sh") }},
		{"no end of options", func(r *Record, _ *fakeHost) {
			r.Argv = r.Argv[:slices.Index(r.Argv, "--")]
		}},
		{"an option cut short", func(r *Record, _ *fakeHost) {
			r.Argv = r.Argv[:slices.Index(r.Argv, "--chdir")+1]
		}},
		{"the session /tmp outside the state directory", func(r *Record, _ *fakeHost) {
			r.TmpBase = "/home/u/tmp"
			r.Argv[slices.Index(r.Argv, stateRoot+"/app-1/tmp/<session>")] = "/home/u/tmp/<session>"
		}},
		{"the session /tmp bound elsewhere", func(r *Record, _ *fakeHost) {
			r.Argv[slices.Index(r.Argv, stateRoot+"/app-1/tmp/<session>")+1] = "/home/u/src/app/tmp"
		}},
		{"the session /tmp bound twice", func(r *Record, _ *fakeHost) {
			insert(r, "--bind", stateRoot+"/app-1/tmp/<session>", "/tmp")
		}},
		{"a source descriptor as a file's content", func(r *Record, _ *fakeHost) {
			r.Argv[slices.Index(r.Argv, "9")] = "7"
			r.Argv[slices.Index(r.Argv, "--bind-fd")+1] = "9" // keep every descriptor used
		}},
		{"a descriptor not in the record", func(r *Record, _ *fakeHost) {
			insert(r, "--ro-bind-fd", "20", "/x")
		}},
		{"a descriptor used twice", func(r *Record, _ *fakeHost) {
			insert(r, "--ro-bind-fd", "7", "/x")
		}},
		{"a descriptor the argv does not use", func(r *Record, _ *fakeHost) {
			addSource(r, 12, "/home/u/.ssh")
		}},
		{"no syscall filter", func(r *Record, _ *fakeHost) {
			i := slices.Index(r.Argv, "--seccomp")
			r.Argv = slices.Delete(r.Argv, i, i+2)
			r.Files = slices.DeleteFunc(r.Files, func(f File) bool { return f.Kind == KindSeccomp })
		}},
		{"a descriptor number with a sign", func(r *Record, _ *fakeHost) {
			r.Argv[slices.Index(r.Argv, "9")] = "+9"
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := baseRecord()
			h := newFakeHost(r)
			tc.edit(r, h)
			for _, f := range r.Files {
				h.files[f.FD] = f.Path
			}
			err := Vet(r, Expect{StateRoot: stateRoot}, h)
			if !errors.Is(err, ErrUnsafe) && !errors.Is(err, ErrRecord) {
				t.Fatalf("Vet = %v, want a refusal", err)
			}
			t.Log(err)
		})
	}
}

// What a forged record may still do passes Vet because it changes nothing on the
// host before the block; the comparison then refuses it (TestCompare).
func TestVetAdmitsHarmless(t *testing.T) {
	for name, edit := range map[string]func(*Record){
		"a read-write bind of ~/.ssh by descriptor, nothing placed below": func(r *Record) {
			insert(r, "--bind-fd", "12", "/mnt")
			addSource(r, 12, "/home/u/.ssh")
		},
		"a read-only bind of / by path": func(r *Record) { insert(r, "--ro-bind", "/", "/mnt") },
		"a file and a link in a tmpfs":  func(r *Record) { insert(r, "--tmpfs", "/x", "--symlink", "/home/u/.ssh", "/x/l") },
		"a mount point in the session /tmp (a home under /tmp)": func(r *Record) {
			insert(r, "--bind-fd", "12", "/tmp/u/home")
			addSource(r, 12, "/home/u")
		},
	} {
		r := baseRecord()
		edit(r)
		if err := Vet(r, Expect{StateRoot: stateRoot}, newFakeHost(r)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}
