package buildstamp

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func note(name string, typ uint32, desc []byte) []byte {
	b := binary.LittleEndian.AppendUint32(nil, uint32(len(name)))
	b = binary.LittleEndian.AppendUint32(b, uint32(len(desc)))
	b = binary.LittleEndian.AppendUint32(b, typ)
	b = append(b, name...)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	b = append(b, desc...)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

func TestParse(t *testing.T) {
	desc := append([]byte("dsb1\x01\x02\x03\x04\x05\x06\x07\x08"), "v1.2-3-gabc"...)
	sec := append(note("Go\x00\x00", 4, []byte("go-build-id")), note("GNU\x00", ntGNUBuildID, desc)...)
	got := Parse(gnuBuildID(sec, binary.LittleEndian))
	if want := (Stamp{Digest: "0102030405060708", Version: "v1.2-3-gabc"}); got != want {
		t.Fatalf("Parse = %+v, want %+v", got, want)
	}
	// Another linker's build id is no stamp.
	if s := Parse([]byte("\x9a\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b")); s.Stamped() {
		t.Fatalf("a foreign build id parsed as %+v", s)
	}
}

func TestReadUnstamped(t *testing.T) {
	// The test binary is built without -B: no stamp, and no error.
	s, err := Read(os.Args[0])
	if err != nil || s.Stamped() {
		t.Fatalf("Read(test binary) = %+v, %v; want no stamp", s, err)
	}
	script := filepath.Join(t.TempDir(), "script")
	if err := os.WriteFile(script, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if s, err := Read(script); err != nil || s.Stamped() {
		t.Fatalf("Read(a script) = %+v, %v; want no stamp", s, err)
	}
}

func TestCheck(t *testing.T) {
	// An unstamped running binary compares nothing.
	if err := Check("devsandbox-init", os.Args[0], Stamp{}); err != nil {
		t.Fatalf("Check with an unstamped self: %v", err)
	}
	// A stamped one refuses an unstamped helper, naming it.
	self := Stamp{Digest: "0102030405060708", Version: "v1"}
	err := Check("devsandbox-init", os.Args[0], self)
	var se *SkewError
	if !errors.Is(err, ErrSkew) || !errors.As(err, &se) || se.Name != "devsandbox-init" || se.Path != os.Args[0] || se.Want != self || se.Got.Stamped() {
		t.Fatalf("Check of an unstamped helper = %v, want a SkewError naming it", err)
	}
	if _, err := Read(filepath.Join(t.TempDir(), "absent")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Read(absent) = %v", err)
	}
}

// BenchmarkRead is the launch path's cost per helper checked (and once for the
// running binary): an open and three small reads.
func BenchmarkRead(b *testing.B) {
	for b.Loop() {
		if _, err := Read(os.Args[0]); err != nil {
			b.Fatal(err)
		}
	}
}
