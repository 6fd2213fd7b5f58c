package prestart

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"syscall"
	"testing"
)

func TestStoreRoundTrip(t *testing.T) {
	s := Store{Dir: filepath.Join(t.TempDir(), "prestart")}
	r := baseRecord()
	if _, err := s.Load(r.Key); !errors.Is(err, ErrNoRecord) {
		t.Fatalf("Load before any record: %v, want ErrNoRecord", err)
	}
	if err := s.Save(r); err != nil {
		t.Fatal(err)
	}
	got, err := s.Load(r.Key)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, r) {
		t.Errorf("loaded %+v, want %+v", got, r)
	}
	ents, _ := os.ReadDir(s.Dir)
	if len(ents) != 1 {
		t.Errorf("the store holds %v, want the one record", ents)
	}
	fi, _ := os.Stat(filepath.Join(s.Dir, r.Key))
	di, _ := os.Stat(s.Dir)
	if fi.Mode().Perm() != 0o600 || di.Mode().Perm() != 0o700 {
		t.Errorf("modes %v, %v", fi.Mode(), di.Mode())
	}
	if err := s.Remove(r.Key); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Load(r.Key); !errors.Is(err, ErrNoRecord) {
		t.Errorf("Load after Remove: %v", err)
	}
}

// A record file that is not devsandbox's kind is refused, and a FIFO does not hold
// the launch.
func TestStoreRefuses(t *testing.T) {
	r := baseRecord()
	good, err := Encode(r)
	if err != nil {
		t.Fatal(err)
	}
	for name, plant := range map[string]func(t *testing.T, dir, file string){
		"a symbolic link": func(t *testing.T, dir, file string) {
			other := filepath.Join(t.TempDir(), "r")
			must(t, os.WriteFile(other, good, 0o600))
			must(t, os.Symlink(other, file))
		},
		"a readable file": func(t *testing.T, dir, file string) { must(t, os.WriteFile(file, good, 0o644)) },
		"a second link": func(t *testing.T, dir, file string) {
			must(t, os.WriteFile(file, good, 0o600))
			must(t, os.Link(file, filepath.Join(dir, "other")))
		},
		"a FIFO":      func(t *testing.T, dir, file string) { must(t, syscall.Mkfifo(file, 0o600)) },
		"a directory": func(t *testing.T, dir, file string) { must(t, os.Mkdir(file, 0o700)) },
		"another launch's record": func(t *testing.T, dir, file string) {
			o := baseRecord()
			o.Key = "fedcba9876543210fedcba9876543210"
			b, _ := Encode(o)
			must(t, os.WriteFile(file, b, 0o600))
		},
		"a shared directory": func(t *testing.T, dir, file string) {
			must(t, os.WriteFile(file, good, 0o600))
			must(t, os.Chmod(dir, 0o755))
		},
		"a directory through a link": func(t *testing.T, dir, file string) {
			real := filepath.Join(t.TempDir(), "real")
			must(t, os.Rename(dir, real))
			must(t, os.WriteFile(filepath.Join(real, filepath.Base(file)), good, 0o600))
			must(t, os.Symlink(real, dir))
		},
	} {
		t.Run(name, func(t *testing.T) {
			s := Store{Dir: filepath.Join(t.TempDir(), "prestart")}
			must(t, os.Mkdir(s.Dir, 0o700))
			plant(t, s.Dir, filepath.Join(s.Dir, r.Key))
			if _, err := s.Load(r.Key); !errors.Is(err, ErrRecord) {
				t.Errorf("Load = %v, want ErrRecord", err)
			}
		})
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
