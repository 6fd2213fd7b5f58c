package hostaddr

import (
	"net/netip"
	"slices"
	"testing"
)

// TestReadHasLoopback: every Linux host has lo's 127.0.0.1, unmapped, without a zone.
func TestReadHasLoopback(t *testing.T) {
	addrs, err := Read()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(addrs, netip.MustParseAddr("127.0.0.1")) {
		t.Errorf("Read() = %v, want 127.0.0.1 among them", addrs)
	}
	for _, a := range addrs {
		if a.Is4In6() || a.Zone() != "" {
			t.Errorf("%v: want unmapped, without a zone", a)
		}
	}
}
