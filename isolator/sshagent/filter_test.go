package sshagent

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"testing"
)

// sshString is the protocol's string: a uint32 length, then the bytes.
func sshString(s string) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(len(s)))
	return append(b, s...)
}

func ext(name string, rest ...byte) []byte {
	return append(append([]byte{extensionRequest}, sshString(name)...), rest...)
}

func TestAllowed(t *testing.T) {
	for _, tc := range []struct {
		name string
		msg  []byte
		want bool
	}{
		{"request identities", []byte{11}, true},
		{"sign request", append([]byte{13}, sshString("key")...), true},
		{"session-bind", ext("session-bind@openssh.com", 1, 2, 3), true},
		{"query", ext("query"), true},
		{"empty", nil, false},
		{"failure type", []byte{5}, false},
		{"add identity", []byte{17, 0, 0, 0, 7}, false},
		{"remove identity", []byte{18}, false},
		{"remove all", []byte{19}, false},
		{"add smartcard key", []byte{20}, false},
		{"remove smartcard key", []byte{21}, false},
		{"lock", append([]byte{22}, sshString("pw")...), false},
		{"unlock", append([]byte{23}, sshString("pw")...), false},
		{"add constrained identity", []byte{25}, false},
		{"add constrained smartcard key", []byte{26}, false},
		{"protocol 1 list", []byte{1}, false},
		{"unknown", []byte{200}, false},
		{"other extension", ext("restrict-destination-v00@openssh.com"), false},
		{"extension name prefix", ext("session-bind@openssh.com.evil"), false},
		{"extension without name", []byte{27}, false},
		{"extension name too long for message", []byte{27, 0, 0, 0, 30, 'q'}, false},
		{"extension name over limit", append([]byte{27}, sshString(string(bytes.Repeat([]byte("a"), 300)))...), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Allowed(tc.msg); got != tc.want {
				t.Errorf("Allowed(%v) = %v, want %v", tc.msg, got, tc.want)
			}
		})
	}
}

func TestReadFrame(t *testing.T) {
	frame := func(n uint32, body []byte) []byte { return append(binary.BigEndian.AppendUint32(nil, n), body...) }
	for _, tc := range []struct {
		name    string
		in      []byte
		want    []byte
		wantErr error
	}{
		{"whole", frame(1, []byte{11}), frame(1, []byte{11}), nil},
		{"next frame left", append(frame(1, []byte{11}), 0, 0), frame(1, []byte{11}), nil},
		{"at the limit", frame(MaxMessage, make([]byte, MaxMessage)), frame(MaxMessage, make([]byte, MaxMessage)), nil},
		{"zero length", frame(0, nil), nil, ErrFrame},
		{"over the limit", frame(MaxMessage+1, make([]byte, 8)), nil, ErrFrame},
		{"huge", frame(0xffffffff, nil), nil, ErrFrame},
		{"short body", frame(5, []byte{13, 1}), nil, io.ErrUnexpectedEOF},
		{"short header", []byte{0, 0}, nil, io.ErrUnexpectedEOF},
		{"nothing", nil, nil, io.EOF},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := readFrame(bytes.NewReader(tc.in))
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil && err != nil) {
				t.Fatalf("readFrame error = %v, want %v", err, tc.wantErr)
			}
			if !bytes.Equal(got, tc.want) {
				t.Errorf("readFrame = %d bytes, want %d", len(got), len(tc.want))
			}
		})
	}
}
