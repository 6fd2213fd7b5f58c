package main

import (
	"reflect"
	"testing"
)

func TestCheckMounts(t *testing.T) {
	for _, c := range []struct {
		n    int
		prop string
		uid  int
		ok   bool
	}{
		{0, propShared, 1000, true},
		{0, propShared, 0, true},
		{300, propShared, 0, true},
		{300, propPrivate, 0, true},
		{300, propShared, 1000, false},
		{-1, propShared, 0, false},
		{300, "slave", 0, false},
		{0, "", 0, false},
	} {
		if err := checkMounts(c.n, c.prop, c.uid); (err == nil) != c.ok {
			t.Errorf("checkMounts(%d, %q, %d) = %v, want ok %v", c.n, c.prop, c.uid, err, c.ok)
		}
	}
}

func TestMountNSArgsRoundTrip(t *testing.T) {
	args := []string{"-bin", "bin/devsandbox", "-mounts", "300", "-only", "launch"}
	argv := mountNSArgs("/proc/self/exe", args)
	want := []string{"/proc/self/exe", "-bin", "bin/devsandbox", "-mounts", "300", "-only", "launch", inMountNSFlag}
	if !reflect.DeepEqual(argv, want) {
		t.Fatalf("mountNSArgs = %q, want %q", argv, want)
	}
	got, in := withoutMountNSFlag(argv[1:])
	if !in || !reflect.DeepEqual(got, args) {
		t.Fatalf("withoutMountNSFlag = %q, %v; want %q, true", got, in, args)
	}
	if got, in := withoutMountNSFlag(args); in || !reflect.DeepEqual(got, args) {
		t.Fatalf("withoutMountNSFlag(unmarked) = %q, %v; want %q, false", got, in, args)
	}
}

func TestStrayPropagation(t *testing.T) {
	info := `22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw
23 22 0:5 / /dev rw,nosuid master:2 - devtmpfs udev rw
24 22 0:21 / /proc rw,nosuid - proc proc rw
25 22 0:22 / /tmp rw - tmpfs tmpfs rw
26 25 0:23 / /tmp/m/0 rw shared:7 - tmpfs tmpfs rw
27 25 0:24 / /tmp/m/1 rw master:8 - tmpfs tmpfs rw
28 25 0:25 / /tmp/m/2 rw shared:9 master:1 - tmpfs tmpfs rw
`
	for _, c := range []struct {
		ours map[string]bool
		want []string
	}{
		{nil, []string{"/", "/dev", "/tmp/m/0", "/tmp/m/1", "/tmp/m/2"}},
		// Ours may be shared, never a slave of a group from elsewhere.
		{map[string]bool{"/tmp/m/0": true, "/tmp/m/1": true, "/tmp/m/2": true}, []string{"/", "/dev", "/tmp/m/1", "/tmp/m/2"}},
		{map[string]bool{"/": true}, []string{"/dev", "/tmp/m/0", "/tmp/m/1", "/tmp/m/2"}},
	} {
		if got := strayPropagation(info, c.ours); !reflect.DeepEqual(got, c.want) {
			t.Errorf("strayPropagation(ours %v) = %q, want %q", c.ours, got, c.want)
		}
	}
	if got := strayPropagation("24 22 0:21 / /proc rw,nosuid - proc proc rw\n", nil); got != nil {
		t.Fatalf("strayPropagation(private) = %q, want none", got)
	}
	// An optional field after the separator is the file system's, not propagation.
	if got := strayPropagation("24 22 0:21 / /x rw - tmpfs shared:3 rw\n", nil); got != nil {
		t.Fatalf("strayPropagation(source named shared:3) = %q, want none", got)
	}
}
