package wire

import (
	"reflect"
	"strings"
	"testing"
)

// The compact form decodes to the Manifest encoded, as JSON does, for paths with
// every kind of awkward byte (a path may hold any byte but NUL; JSON replaces bytes
// that are not UTF-8, the compact form keeps them).
func TestEncodeChecksRoundTrip(t *testing.T) {
	checks := []Check{
		{Kind: CheckMaskFile, Path: "/home/u/p/.env", Dev: 2049, Ino: 1 << 40},
		{Kind: CheckMaskDir, Path: "/home/u/.ssh", Allow: []string{"config", "a b", `q"uote`}},
		{Kind: CheckData, Path: "/etc/hosts", Size: 221},
		{Kind: CheckRO, Path: "/p/new\nline/and space/\"quote\"\\back"},
		{Kind: CheckMaskDir, Path: "/x", Allow: []string{""}},
	}
	latin1 := Check{Kind: CheckRW, Path: "/p/caf\xe9 not utf-8\t/é"}
	if m, err := DecodeManifest(EncodeChecks([]Check{latin1}, "")); err != nil || m.Checks[0].Path != latin1.Path {
		t.Errorf("a path that is not UTF-8: %+v %v", m, err)
	}
	for _, boot := range []string{"", "0b1c2d3e-aaaa-bbbb-cccc-0123456789ab"} {
		want := &Manifest{Checks: checks, BootID: boot}
		fromJSON, err := DecodeManifest(want.Encode())
		if err != nil {
			t.Fatal(err)
		}
		got, err := DecodeManifest(EncodeChecks(checks, boot))
		if err != nil {
			t.Fatalf("decoding %q: %v", EncodeChecks(checks, boot), err)
		}
		if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(got, fromJSON) {
			t.Errorf("round trip:\n got %+v\nwant %+v\njson %+v", got, want, fromJSON)
		}
	}
	if m, err := DecodeManifest(EncodeChecks(nil, "")); err != nil || len(m.Checks) != 0 || m.BootID != "" {
		t.Errorf("empty: %+v %v", m, err)
	}
}

// Anything but what EncodeChecks writes is refused, so the init runs nothing on a
// manifest it did not fully read.
func TestDecodeChecksRefusesMalformed(t *testing.T) {
	good := EncodeChecks([]Check{{Kind: CheckRO, Path: "/a", Allow: []string{"b"}}}, "id")
	if _, err := DecodeManifest(good); err != nil {
		t.Fatalf("good: %v", err)
	}
	for _, s := range []string{
		strings.TrimSuffix(good, "\n"),                         // the last line cut off
		checksHeader + `"ro" 0 0 0 0 "/a"` + "\nx\n",           // a line that is no check
		checksHeader + `"ro" 0 0 0 "/a"` + "\n",                // a number missing
		checksHeader + `"ro" -1 0 0 0 "/a"` + "\n",             // a negative size
		checksHeader + `"ro" +1 0 0 0 "/a"` + "\n",             // a sign
		checksHeader + `"ro" 0 0 0 1 "/a"` + "\n",              // an allowed entry missing
		checksHeader + `"ro" 0 0 0 2 "/a" "b"` + "\n",          // one of two missing
		checksHeader + `"ro" 0 0 0 0 "/a" "b"` + "\n",          // one too many
		checksHeader + `"ro" 0 0 0 0 "/a" ` + "\n",             // a trailing space
		checksHeader + `"ro" 0 0 0 0 /a` + "\n",                // an unquoted path
		checksHeader + `"ro" 0 0 0 0 "/a` + "\n",               // an unterminated quote
		checksHeader + `"ro"  0 0 0 0 "/a"` + "\n",             // two spaces
		checksHeader + `ro 0 0 0 0 "/a"` + "\n",                // an unquoted kind
		checksHeader + `"ro" 0 0 0 0 "/a"` + "\nboot \"id\"\n", // boot id not first
		checksHeader + "boot id\n",                             // an unquoted boot id
		checksHeader + `"ro" 0 0 0 99999999999 "/a"` + "\n",
	} {
		if m, err := DecodeManifest(s); err == nil {
			t.Errorf("%q decoded to %+v", s, m)
		}
	}
}
