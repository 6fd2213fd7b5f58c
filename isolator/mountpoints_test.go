package isolator_test

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/isolator/internal/plantest"
)

// The destinations whose mount point lies in a read-only bind of a host directory: a
// system directory, the host's root, a read-only bind. bubblewrap creates a missing
// mount point, which it cannot do there.
func TestReadOnlyDestinations(t *testing.T) {
	sys := []isolator.SystemPath{{Path: "/usr", Optional: true}, {Path: "/opt", Optional: true},
		{Path: "/bin", Link: "usr/bin"}, {Path: "/etc/hosts", Copy: true, Optional: true}}
	tests := []struct {
		name   string
		mounts []isolator.Mount // after plantest's home, project and hooks
		edit   func(p *isolator.Plan)
		want   []isolator.ReadOnlyDest
	}{
		{name: "base plan: the project and hooks lie in writable binds"},
		{
			name: "in system directories, through a link, in the fresh root",
			mounts: []isolator.Mount{
				{Kind: isolator.Bind, Source: "/data", Dest: "/opt/x", Why: "sandbox.host_mounts"},
				{Kind: isolator.Bind, Source: "/data", Dest: "/usr/local/share/y", ReadOnly: true, Why: "sandbox.host_mounts"},
				{Kind: isolator.Bind, Source: "/data", Dest: "/bin/z", Why: "sandbox.host_mounts"},
				{Kind: isolator.Bind, Source: "/data", Dest: "/srv/x", Why: "sandbox.host_mounts"},
				{Kind: isolator.Bind, Source: "/data", Dest: "/etc/x", Why: "sandbox.host_mounts"},
			},
			want: []isolator.ReadOnlyDest{
				{Dest: "/opt/x", Why: "sandbox.host_mounts", Source: "/data", Host: "/opt/x", In: "/opt", InWhy: "system directory"},
				{Dest: "/usr/local/share/y", Why: "sandbox.host_mounts", Source: "/data", Host: "/usr/local/share/y", In: "/usr", InWhy: "system directory"},
				{Dest: "/bin/z", Why: "sandbox.host_mounts", Source: "/data", Host: "/usr/bin/z", In: "/usr", InWhy: "system directory"},
			},
		},
		{
			name: "in a read-only bind, not in a read-write one or a tmpfs",
			mounts: []isolator.Mount{
				{Kind: isolator.Bind, Source: "/srv/ro", Dest: "/mnt/ro", ReadOnly: true, Why: "sandbox.ro_binds"},
				{Kind: isolator.Bind, Source: "/data", Dest: "/mnt/ro/in", Optional: true, Why: "tool x"},
				{Kind: isolator.MaskFile, Dest: "/mnt/ro/.env", Why: "sandbox.mask_files"},
				{Kind: isolator.Bind, Source: "/srv/rw", Dest: "/mnt/rw", Why: "sandbox.rw_binds"},
				{Kind: isolator.Bind, Source: "/data", Dest: "/mnt/rw/in", Why: "sandbox.host_mounts"},
				{Kind: isolator.MaskDir, Dest: "/mnt/ro/hidden", Why: "sandbox.hide_paths"},
				{Kind: isolator.Bind, Source: "/data", Dest: "/mnt/ro/hidden/in", Why: "sandbox.host_mounts"},
			},
			want: []isolator.ReadOnlyDest{
				{Dest: "/mnt/ro/in", Why: "tool x", Source: "/data", Optional: true, Host: "/srv/ro/in", In: "/srv/ro", InWhy: "sandbox.ro_binds"},
				{Dest: "/mnt/ro/.env", Why: "sandbox.mask_files", Host: "/srv/ro/.env", In: "/srv/ro", InWhy: "sandbox.ro_binds"},
				{Dest: "/mnt/ro/hidden", Why: "sandbox.hide_paths", Host: "/srv/ro/hidden", In: "/srv/ro", InWhy: "sandbox.ro_binds"},
			},
		},
		{
			name: "the host's root",
			edit: func(p *isolator.Plan) {
				p.System = isolator.SystemView{Host: true}
				p.Mounts = append(p.Mounts, isolator.Mount{Kind: isolator.Bind, Source: "/data", Dest: "/srv/x", Why: "sandbox.host_mounts"})
			},
			want: []isolator.ReadOnlyDest{
				{Dest: plantest.Home, Why: "sandbox home", Source: plantest.SandboxHome, Host: plantest.Home, In: "/", InWhy: "the host's root"},
				{Dest: "/srv/x", Why: "sandbox.host_mounts", Source: "/data", Host: "/srv/x", In: "/", InWhy: "the host's root"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := plantest.Base()
			p.System.Paths = sys
			p.Mounts = append(p.Mounts, tt.mounts...)
			if tt.edit != nil {
				tt.edit(p)
			}
			if got := isolator.ReadOnlyDestinations(p); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got\n%+v\nwant\n%+v", got, tt.want)
			}
		})
	}
}

// A mount point that would be new in a read-only host directory stops the launch
// before bubblewrap starts, naming the setting, the destination, why, and what works;
// one that exists there, or an optional bind without its source, does not.
func TestCheckMountPoints(t *testing.T) {
	dir := t.TempDir()
	ro, data := filepath.Join(dir, "ro"), filepath.Join(dir, "data")
	for _, d := range []string{ro + "/there", data} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	p := plantest.Base()
	p.Mounts = append(p.Mounts,
		isolator.Mount{Kind: isolator.Bind, Source: ro, Dest: "/view", ReadOnly: true, Why: "sandbox.ro_binds"},
		isolator.Mount{Kind: isolator.Bind, Source: data, Dest: "/view/there", Why: "sandbox.host_mounts"},
		isolator.Mount{Kind: isolator.Bind, Source: dir + "/absent", Dest: "/view/absent", Optional: true, Why: "tool x"},
		// A host socket gone since the Plan was built: the backend drops its mask.
		isolator.Mount{Kind: isolator.MaskFile, Source: ro + "/gone.sock", Dest: "/view/gone.sock", Optional: true, Why: "a host service's socket"},
	)
	if err := isolator.CheckMountPoints(p); err != nil {
		t.Fatalf("CheckMountPoints: %v", err)
	}
	p.Mounts = append(p.Mounts, isolator.Mount{Kind: isolator.Bind, Source: data, Dest: "/view/new/x", Why: "sandbox.host_mounts"})
	err := isolator.CheckMountPoints(p)
	want := "configuration does not fit this host: --mount (sandbox.host_mounts) " + data + ":/view/new/x: the destination would be a new mount point in " + ro +
		" (sandbox.ro_binds, read-only in the sandbox), where " + ro + "/new/x does not exist; no isolator makes a mount point in a directory the sandbox sees read-only from the host (bubblewrap cannot, and docker and krun keep to the same rule); mount it where a new directory can be made (under /mnt, /srv, your home or the project) or create " + ro + "/new/x on the host first"
	if !errors.Is(err, isolator.ErrConfig) || err.Error() != want {
		t.Errorf("CheckMountPoints:\n got %v\nwant %s", err, want)
	}
}
