package main

import (
	"reflect"
	"testing"
)

func TestCheckMounts(t *testing.T) {
	for _, c := range []struct {
		n, uid int
		ok     bool
	}{
		{0, 1000, true},
		{0, 0, true},
		{300, 0, true},
		{300, 1000, false},
		{-1, 0, false},
	} {
		if err := checkMounts(c.n, c.uid); (err == nil) != c.ok {
			t.Errorf("checkMounts(%d, %d) = %v, want ok %v", c.n, c.uid, err, c.ok)
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

func TestSharedMounts(t *testing.T) {
	info := `22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw
23 22 0:5 / /dev rw,nosuid master:2 - devtmpfs udev rw
24 22 0:21 / /proc rw,nosuid - proc proc rw
25 22 0:22 / /tmp rw - tmpfs tmpfs rw
`
	if got, want := sharedMounts(info), []string{"/", "/dev"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("sharedMounts = %q, want %q", got, want)
	}
	if got := sharedMounts("24 22 0:21 / /proc rw,nosuid - proc proc rw\n"); got != nil {
		t.Fatalf("sharedMounts(private) = %q, want none", got)
	}
}
