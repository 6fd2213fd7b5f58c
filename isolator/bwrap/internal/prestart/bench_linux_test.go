package prestart

import (
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkLoadOpenVet is what an early start does before bwrap's exec with a
// record of the default view's size: load the record from the store, open its
// sources, vet it against the host.
func BenchmarkLoadOpenVet(b *testing.B) {
	d := b.TempDir()
	r := baseRecord()
	state := d + "/state"
	r.TmpBase = state + "/app-1/tmp"
	r.Argv[indexOf(r.Argv, stateRoot+"/app-1/tmp/<session>")] = r.TmpBase + "/" + SessionPlaceholder
	r.Argv[indexOf(r.Argv, stateRoot+"/empty")] = state + "/empty"
	srcs := map[int]string{5: state + "/app-1/etc", 6: d + "/sbhome", 7: d + "/proj", 8: d + "/proj/.git/hooks"}
	for i := range r.Files {
		if p, ok := srcs[r.Files[i].FD]; ok {
			r.Files[i].Path = p
		}
	}
	// The sources, and the mount points a launched project has.
	for _, p := range []string{r.TmpBase, state + "/app-1/etc", d + "/sbhome/src/app", d + "/sbhome/.ssh", d + "/proj/.git/hooks"} {
		if err := os.MkdirAll(p, 0o700); err != nil {
			b.Fatal(err)
		}
	}
	for _, p := range []string{d + "/proj/.env", state + "/empty"} {
		if err := os.WriteFile(p, nil, 0o600); err != nil {
			b.Fatal(err)
		}
	}
	s := Store{Dir: filepath.Join(d, "store")}
	if err := s.Save(r); err != nil {
		b.Fatal(err)
	}
	x := Expect{StateRoot: state}
	b.ResetTimer()
	for b.Loop() {
		rec, err := s.Load(r.Key)
		if err != nil {
			b.Fatal(err)
		}
		h := HostFS{Sources: map[int]*os.File{}}
		for _, f := range rec.Files {
			if f.Kind == KindSource {
				src, _, err := OpenSource(f.Path)
				if err != nil {
					b.Fatal(err)
				}
				h.Sources[f.FD] = src
			}
		}
		if err := Vet(rec, x, h); err != nil {
			b.Fatal(err)
		}
		for _, f := range h.Sources {
			f.Close()
		}
	}
}

func indexOf(s []string, v string) int {
	for i, a := range s {
		if a == v {
			return i
		}
	}
	return -1
}
