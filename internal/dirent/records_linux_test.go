package dirent

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// record is a struct linux_dirent64 as getdents64 writes it: the name, a NUL when
// nul, padded with NULs to pad bytes (0: none). reclen, when not negative, overrides
// the record's length field.
func record(ino uint64, typ byte, name string, nul bool, pad, reclen int) []byte {
	b := make([]byte, header, header+len(name)+1+pad)
	binary.NativeEndian.PutUint64(b[0:], ino)
	binary.NativeEndian.PutUint64(b[8:], 1) // d_off: opaque here
	b[18] = typ
	b = append(b, name...)
	if nul {
		b = append(b, 0)
	}
	for len(b) < pad {
		b = append(b, 0)
	}
	if reclen < 0 {
		reclen = len(b)
	}
	binary.NativeEndian.PutUint16(b[16:], uint16(reclen))
	return b
}

// entries parses buf to "name/type" strings, turning a panic (an index out of range
// where a bounds check is missing) into a test failure that names the case.
func entries(t *testing.T, buf []byte) (got []string, err error) {
	t.Helper()
	defer func() {
		if p := recover(); p != nil {
			t.Fatalf("parsing panicked: %v", p)
		}
	}()
	recs := Parse(buf[:len(buf):len(buf)]) // nothing to read past the end, as in a kernel's buffer
	for i := 0; ; i++ {
		if i > 100 {
			t.Fatal("parsing does not advance")
		}
		name, typ, ok := recs.Next()
		if !ok {
			break
		}
		got = append(got, fmt.Sprintf("%s/%d", name, typ))
	}
	if _, _, ok := recs.Next(); ok {
		t.Fatal("Next returned an entry after it ended")
	}
	return got, recs.Err()
}

func cat(recs ...[]byte) []byte {
	var b []byte
	for _, r := range recs {
		b = append(b, r...)
	}
	return b
}

// TestRecords runs the shared parser on crafted getdents64 results: what a kernel
// writes, what os.ReadDir skips, and malformed records that must end the parse with
// an error, not an index out of range or a loop.
func TestRecords(t *testing.T) {
	good := record(7, unix.DT_REG, "a", true, 24, -1)
	long := strings.Repeat("x", 255)
	for _, tc := range []struct {
		name string
		buf  []byte
		want string // the entries, comma-separated
		err  string // a substring of the error; "" for none
	}{
		{name: "empty"},
		{
			name: "kernel layout",
			buf: cat(record(1, unix.DT_DIR, ".", true, 24, -1), record(2, unix.DT_DIR, "..", true, 24, -1),
				record(3, unix.DT_DIR, "sub", true, 24, -1), record(4, unix.DT_LNK, "link", true, 24, -1),
				record(5, unix.DT_UNKNOWN, long, true, 280, -1)),
			want: "sub/4,link/10," + long + "/0",
		},
		{
			name: "inode 0 is skipped, as os.ReadDir does",
			buf:  cat(record(0, unix.DT_REG, "deleted", true, 32, -1), good, record(0, unix.DT_REG, "gone", true, 24, -1)),
			want: "a/8",
		},
		{
			name: "empty name is skipped",
			buf:  cat(record(9, unix.DT_REG, "", true, 24, -1), good),
			want: "a/8",
		},
		{
			name: "name without NUL runs to the record's end",
			buf:  cat(record(9, unix.DT_REG, "abcde", false, 0, -1), good),
			want: "abcde/8,a/8",
		},
		{
			name: "last name without NUL at the buffer's end",
			buf:  cat(good, record(9, unix.DT_REG, "tail", false, 0, -1)),
			want: "a/8,tail/8",
		},
		{
			name: "record length past the buffer",
			buf:  cat(good, record(9, unix.DT_REG, "over", true, 24, 200)),
			want: "a/8",
			err:  "bad directory entry length 200 at byte 24 (24 left)",
		},
		{
			name: "record length past the buffer by one",
			buf:  cat(good, record(9, unix.DT_REG, "over", false, 0, header+5)),
			want: "a/8",
			err:  "bad directory entry length 24",
		},
		{
			name: "record length 0",
			buf:  cat(good, record(9, unix.DT_REG, "zero", true, 24, 0)),
			want: "a/8",
			err:  "bad directory entry length 0 at byte 24",
		},
		{
			name: "record length shorter than the header",
			buf:  cat(record(9, unix.DT_REG, "short", true, 24, header-1), good),
			err:  "bad directory entry length 18 at byte 0",
		},
		{
			name: "truncated header at the end",
			buf:  cat(good, good[:10]),
			want: "a/8",
			err:  "short directory entry (10 bytes) at byte 24",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := entries(t, tc.buf)
			if strings.Join(got, ",") != tc.want {
				t.Errorf("entries:\n got %q\nwant %q", strings.Join(got, ","), tc.want)
			}
			switch {
			case tc.err == "" && err != nil:
				t.Errorf("error %v, want none", err)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Errorf("error %v, want one containing %q", err, tc.err)
			case tc.err != "" && !errors.Is(err, unix.EIO):
				t.Errorf("error %v does not wrap EIO", err)
			}
		})
	}
}
