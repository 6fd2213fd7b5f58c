package sysrandom

import (
	"bytes"
	"testing"
)

// Read fills the whole buffer, and two reads differ.
func TestRead(t *testing.T) {
	var a, b [16]byte
	if err := Read(a[:]); err != nil {
		t.Fatal(err)
	}
	if err := Read(b[:]); err != nil {
		t.Fatal(err)
	}
	if a == [16]byte{} || bytes.Equal(a[:], b[:]) {
		t.Errorf("two reads gave %x and %x", a, b)
	}
	if err := Read(nil); err != nil {
		t.Errorf("an empty read: %v", err)
	}
}
