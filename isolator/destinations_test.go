package isolator_test

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/isolator/internal/plantest"
)

// Paths of the destination checks' plans (see plantest).
const (
	dHome  = plantest.Home
	dProj  = plantest.Project
	dSb    = plantest.SandboxHome
	dOwn   = "/home/u/.local/share/devsandbox/app-0123abcd/tools/claude-1a2b3c4d"
	dClaud = dHome + "/.claude"
)

func TestDestinationChecks(t *testing.T) {
	sbHome := "sandbox home (" + dSb + ")"
	project := "project (" + dProj + ")"
	// plantest's plan: the project's mount point is in the sandbox home, the hooks'
	// in the project.
	base := []isolator.DestCheck{
		{Dest: dProj, Why: "project", Host: dSb + "/src/app", Root: dSb, In: sbHome},
		{Dest: dProj + "/.git/hooks", Why: "git hooks", Host: dProj + "/.git/hooks", Root: dProj, In: project},
	}
	tests := []struct {
		name   string
		mounts []isolator.Mount // after plantest's home, project and hooks
		edit   func(p *isolator.Plan)
		want   []isolator.DestCheck // after base's, unless edit replaces the mounts
	}{
		{name: "base plan"},
		{
			name: "home-relative and nested in the home; a tmpfs's inside is fresh",
			mounts: []isolator.Mount{
				{Kind: isolator.MaskDir, HomeRel: ".ssh", Why: "sandbox.hide_paths"},
				{Kind: isolator.Data, HomeRel: ".ssh/config", Why: "tool ssh"},
				{Kind: isolator.MaskFile, HomeRel: ".config/gcloud/creds", Why: "sandbox.hide_paths"},
			},
			want: []isolator.DestCheck{
				{Dest: dHome + "/.ssh", Why: "sandbox.hide_paths", Host: dSb + "/.ssh", Root: dSb, In: sbHome},
				{Dest: dHome + "/.config/gcloud/creds", Why: "sandbox.hide_paths", Host: dSb + "/.config/gcloud/creds", Root: dSb, In: sbHome},
			},
		},
		{
			name: "in a user's rw bind: its source, not the sandbox home",
			mounts: []isolator.Mount{
				{Kind: isolator.Bind, Source: "/data/rw", Dest: dHome + "/rw", Why: "sandbox.rw_binds"},
				{Kind: isolator.Bind, Source: "/srv/src", Dest: dHome + "/rw/a/mnt", ReadOnly: true, Why: "sandbox.host_mounts"},
				{Kind: isolator.MaskFile, Dest: dHome + "/rw/b/.env", Why: "sandbox.hide_paths"},
			},
			want: []isolator.DestCheck{
				{Dest: dHome + "/rw", Why: "sandbox.rw_binds", Host: dSb + "/rw", Root: dSb, In: sbHome},
				{Dest: dHome + "/rw/a/mnt", Why: "sandbox.host_mounts", Host: "/data/rw/a/mnt", Root: "/data/rw", In: "sandbox.rw_binds (/data/rw)"},
				{Dest: dHome + "/rw/b/.env", Why: "sandbox.hide_paths", Host: "/data/rw/b/.env", Root: "/data/rw", In: "sandbox.rw_binds (/data/rw)"},
			},
		},
		{
			name: "in a tool's own directory (a private dir) and its shared state",
			mounts: []isolator.Mount{
				{Kind: isolator.Bind, Source: dOwn, Dest: dClaud, Why: "tool claude"},
				{Kind: isolator.Bind, Source: dClaud + "/settings.json", Dest: dClaud + "/settings.json", ReadOnly: true, Why: "tool claude"},
				{Kind: isolator.Bind, Source: dClaud + "/projects/k", Dest: dClaud + "/projects/k", Why: "tool claude"},
			},
			edit: func(p *isolator.Plan) { p.PrivateDirs = append(p.PrivateDirs, dOwn, dClaud+"/projects/k") },
			want: []isolator.DestCheck{
				{Dest: dClaud, Why: "tool claude", Host: dSb + "/.claude", Root: dSb, In: sbHome},
				{Dest: dClaud + "/settings.json", Why: "tool claude", Host: dOwn + "/settings.json", Root: dOwn, In: "tool claude (" + dOwn + ")"},
				{Dest: dClaud + "/projects/k", Why: "tool claude", Host: dOwn + "/projects/k", Root: dOwn, In: "tool claude (" + dOwn + ")"},
			},
		},
		{
			name: "a later bind above an earlier one hides it; at a bind's own path nothing is made",
			mounts: []isolator.Mount{
				{Kind: isolator.Bind, Source: "/data/rw/x", Dest: "/opt/a/x", Why: "sandbox.rw_binds"},
				{Kind: isolator.Bind, Source: "/data/rw", Dest: "/opt/a", Why: "sandbox.rw_binds"},
				{Kind: isolator.MaskFile, Dest: "/opt/a/x/k", Why: "sandbox.hide_paths"},
				{Kind: isolator.MaskFile, Dest: "/opt/a", Why: "sandbox.hide_paths"},
			},
			want: []isolator.DestCheck{
				{Dest: "/opt/a/x/k", Why: "sandbox.hide_paths", Host: "/data/rw/x/k", Root: "/data/rw", In: "sandbox.rw_binds (/data/rw)"},
			},
		},
		{
			name: "a read-only host bind the sandbox cannot write, a tmpfs, /run, /tmp: no check",
			mounts: []isolator.Mount{
				{Kind: isolator.Bind, Source: "/srv/ro", Dest: "/srv/ro", ReadOnly: true, Why: "sandbox.ro_binds"},
				{Kind: isolator.Bind, Source: "/srv/src", Dest: "/srv/ro/in/mnt", ReadOnly: true, Why: "sandbox.host_mounts"},
				{Kind: isolator.TmpDir, Dest: "/scratch", Why: "tool x"},
				{Kind: isolator.Data, Dest: "/scratch/a/f", Why: "tool x"},
				{Kind: isolator.Bind, Source: "/srv/src", Dest: "/run/x/y", ReadOnly: true, Why: "sandbox.host_mounts"},
				{Kind: isolator.Bind, Source: "/srv/src", Dest: "/tmp/x/y", ReadOnly: true, Why: "sandbox.host_mounts"},
			},
		},
		{
			name: "a read-only bind from inside the project is checked (the project is writable)",
			mounts: []isolator.Mount{
				{Kind: isolator.Bind, Source: dProj + "/lib", Dest: "/opt/lib", ReadOnly: true, Why: "sandbox.host_mounts"},
				{Kind: isolator.MaskFile, Dest: "/opt/lib/sub/.env", Why: "sandbox.mask_files"},
			},
			want: []isolator.DestCheck{
				{Dest: "/opt/lib/sub/.env", Why: "sandbox.mask_files", Host: dProj + "/lib/sub/.env", Root: dProj + "/lib", In: "sandbox.host_mounts (" + dProj + "/lib)"},
			},
		},
		{
			name: "the host's root: only what lies in a writable directory",
			edit: func(p *isolator.Plan) {
				p.System.Host = true
				p.Mounts = []isolator.Mount{
					{Kind: isolator.Bind, Source: "/srv/src", Dest: "/etc/x/y", ReadOnly: true, Why: "sandbox.host_mounts"},
					{Kind: isolator.Bind, Source: "/srv/src", Dest: dSb + "/a/b", ReadOnly: true, Why: "sandbox.host_mounts"},
				}
			},
			want: []isolator.DestCheck{
				{Dest: dSb + "/a/b", Why: "sandbox.host_mounts", Host: dSb + "/a/b", Root: dSb, In: "the host's root (/)"},
			},
		},
		{
			name: "secret files and the init below a bind over /run",
			mounts: []isolator.Mount{
				{Kind: isolator.Bind, Source: "/data/rw", Dest: "/run", Why: "sandbox.rw_binds"},
			},
			edit: func(p *isolator.Plan) {
				p.Secrets = []isolator.Secret{{Name: "TOKEN", AsFile: true, EnvSource: "TOKEN"}, {Name: "ENV", EnvSource: "ENV"}}
			},
			want: []isolator.DestCheck{
				{Dest: "/run/secrets/TOKEN", Why: "secret TOKEN", Host: "/data/rw/secrets/TOKEN", Root: "/data/rw", In: "sandbox.rw_binds (/data/rw)"},
				{Dest: isolator.InitPath, Why: "the init", Host: "/data/rw/devsandbox/init", Root: "/data/rw", In: "sandbox.rw_binds (/data/rw)"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := plantest.Base()
			p.Mounts = append(p.Mounts, tt.mounts...)
			if tt.edit != nil {
				tt.edit(p)
			}
			want := tt.want
			if p.Mounts[0].Why == "sandbox home" {
				want = append(append([]isolator.DestCheck(nil), base...), want...)
			}
			if got := isolator.DestinationChecks(p); !reflect.DeepEqual(got, want) {
				t.Errorf("got\n%s\nwant\n%s", checksText(got), checksText(want))
			}
		})
	}
}

func checksText(cs []isolator.DestCheck) string {
	var b strings.Builder
	for _, c := range cs {
		b.WriteString(c.Dest + " (" + c.Why + "): " + c.Host + " below " + c.Root + " in " + c.In + "\n")
	}
	return b.String()
}

// A link in a user's rw bind, below a destination nested in it, stops the launch,
// naming the link, the destination, the binding and the fix; nothing is created.
func TestCheckDestinationsRWBind(t *testing.T) {
	dir := t.TempDir()
	rw, outside := filepath.Join(dir, "rw"), filepath.Join(dir, "outside")
	for _, d := range []string{rw, outside} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(outside, filepath.Join(rw, "a")); err != nil {
		t.Fatal(err)
	}
	p := plantest.Base()
	p.Mounts = append(p.Mounts,
		isolator.Mount{Kind: isolator.Bind, Source: rw, Dest: "/opt/rw", Why: "sandbox.rw_binds"},
		isolator.Mount{Kind: isolator.Bind, Source: "/usr", Dest: "/opt/rw/a/b/mnt", ReadOnly: true, Why: "sandbox.host_mounts"})
	err := isolator.CheckDestinations(p)
	if !errors.Is(err, isolator.ErrProtection) {
		t.Fatalf("want ErrProtection, got %v", err)
	}
	for _, want := range []string{filepath.Join(rw, "a") + " is a symlink", "/opt/rw/a/b/mnt (sandbox.host_mounts)", "inside sandbox.rw_binds (" + rw + ")", "remove the link"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not say %q: %v", want, err)
		}
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Errorf("created %v through the link", entries)
	}
	// Without the link: nothing to refuse (components that do not exist are not links).
	if err := os.Remove(filepath.Join(rw, "a")); err != nil {
		t.Fatal(err)
	}
	if err := isolator.CheckDestinations(p); err != nil {
		t.Fatal(err)
	}
}

// The launch's cost of the check: a plan with a project and a sandbox home on disk,
// and 20 destinations nested three deep in the project.
func BenchmarkCheckDestinations(b *testing.B) {
	dir := b.TempDir()
	p := plantest.Base()
	p.Project.Dir, p.SandboxHome = filepath.Join(dir, "home/u/src/app"), filepath.Join(dir, "sbhome")
	p.User.HostHome = filepath.Join(dir, "home/u")
	p.Mounts = []isolator.Mount{
		{Kind: isolator.Bind, Source: p.SandboxHome, Dest: p.User.HostHome, Why: "sandbox home"},
		{Kind: isolator.Bind, Source: p.Project.Dir, Dest: p.Project.Dir, Why: "project"},
	}
	for i := 0; i < 20; i++ {
		d := filepath.Join(p.Project.Dir, "a", "b", string(rune('c'+i)))
		if err := os.MkdirAll(d, 0o755); err != nil {
			b.Fatal(err)
		}
		p.Mounts = append(p.Mounts, isolator.Mount{Kind: isolator.MaskFile, Dest: d + "/.env", Why: "sandbox.mask_files"})
	}
	for i := 0; i < b.N; i++ {
		if err := isolator.CheckDestinations(p); err != nil {
			b.Fatal(err)
		}
	}
}

// TestRecordProject: the project's directory is recorded beside the sandbox home,
// and recorded again when the same sandbox home now serves another path.
func TestRecordProject(t *testing.T) {
	base := filepath.Join(t.TempDir(), "proj-12345678")
	p := &isolator.Plan{SandboxHome: filepath.Join(base, "home"), Project: isolator.Project{Dir: "/src/proj"}}
	record := filepath.Join(base, "project")
	if err := os.MkdirAll(p.SandboxHome, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{"/src/proj", "/src/proj", "/moved/proj"} {
		p.Project.Dir = dir
		isolator.RecordProject(p)
		b, err := os.ReadFile(record)
		if err != nil || string(b) != dir+"\n" {
			t.Fatalf("after recording %s: %q, %v", dir, b, err)
		}
		if fi, err := os.Stat(record); err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("%s: %v, %v", record, fi.Mode(), err)
		}
	}
	// No sandbox home (a plan for a harness's own subprocesses): nothing is written.
	isolator.RecordProject(&isolator.Plan{Project: isolator.Project{Dir: "/src/proj"}})
}
