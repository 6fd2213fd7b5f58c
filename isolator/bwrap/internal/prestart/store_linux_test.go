package prestart

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"unsafe"
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

// TestSaveNotThroughSwappedPath: Save writes its temporary file relative to the
// directory it opened (and checked: the user's, 0700, no link), never by the path
// again: the store's path swapped for a link right after the check must not get a
// file where the link points, nor lose the record.
func TestSaveNotThroughSwappedPath(t *testing.T) {
	root := t.TempDir()
	s := Store{Dir: filepath.Join(root, "prestart")}
	outside := filepath.Join(root, "outside")
	if err := os.Mkdir(outside, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(s.Dir, 0o700); err != nil {
		t.Fatal(err)
	}
	afterOpenDir = func() {
		if err := os.Rename(s.Dir, s.Dir+".opened"); err != nil {
			t.Error(err)
		}
		if err := os.Symlink(outside, s.Dir); err != nil {
			t.Error(err)
		}
	}
	t.Cleanup(func() { afterOpenDir = nil })
	var created []string
	done := make(chan struct{})
	// What lands in outside while Save runs (its deferred removal would hide it).
	w, err := syscall.InotifyInit1(syscall.IN_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := syscall.InotifyAddWatch(w, outside, syscall.IN_CREATE); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(done)
		buf := make([]byte, 4096)
		n, _ := syscall.Read(w, buf)
		for off := 0; off+syscall.SizeofInotifyEvent <= n; {
			ev := (*syscall.InotifyEvent)(unsafe.Pointer(&buf[off]))
			name := buf[off+syscall.SizeofInotifyEvent : off+syscall.SizeofInotifyEvent+int(ev.Len)]
			created = append(created, strings.TrimRight(string(name), "\x00"))
			off += syscall.SizeofInotifyEvent + int(ev.Len)
		}
	}()
	r := baseRecord()
	err = s.Save(r)
	// A file of the test's own: the read returns with it when Save created none.
	if f, oerr := os.Create(filepath.Join(outside, "end")); oerr == nil {
		f.Close()
	}
	<-done
	syscall.Close(w)
	var planted []string
	for _, n := range created {
		if n != "end" {
			planted = append(planted, n)
		}
	}
	if len(planted) > 0 {
		t.Errorf("Save created %v in %s, where the swapped path's link points (err %v)", planted, outside, err)
	}
	if err != nil {
		t.Errorf("Save: %v, want the record saved in the directory it opened", err)
	}
	if _, err := (Store{Dir: s.Dir + ".opened"}).Load(r.Key); err != nil {
		t.Errorf("the record is not in the directory Save opened: %v", err)
	}
}
