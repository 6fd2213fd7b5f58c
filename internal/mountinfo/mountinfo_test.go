package mountinfo

import (
	"reflect"
	"testing"
)

func TestParse(t *testing.T) {
	text := "" +
		"22 1 0:21 / / rw,relatime shared:1 - ext4 /dev/sda1 rw,errors=remount-ro\n" +
		"35 22 0:30 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n" +
		"36 22 0:31 / /sys/fs/cgroup/pids rw master:7 shared:9 - cgroup cgroup rw,pids\n" +
		"40 22 8:1 /home/u/cfg\\040dir /mnt/with\\040space rw - ext4 /dev/sda1 rw\n" +
		"43 22 0:40 / /home/u/no\u00a0break\r\v\f rw - tmpfs tmpfs rw\n" +
		"garbage line\n" +
		"41 22 8:1 / /no-separator rw ext4 /dev/sda1 rw\n" +
		"42 22 8:1 / /short rw - ext4\n" +
		"x 22 8:1 / /bad-id rw - ext4 /dev/sda1 rw\n"
	want := []Entry{
		{ID: 22, Parent: 1, Dev: "0:21", Root: "/", Point: "/", FSType: "ext4", SuperOpts: "rw,errors=remount-ro"},
		{ID: 35, Parent: 22, Dev: "0:30", Root: "/", Point: "/sys/fs/cgroup", FSType: "cgroup2", SuperOpts: "rw,nsdelegate"},
		{ID: 36, Parent: 22, Dev: "0:31", Root: "/", Point: "/sys/fs/cgroup/pids", FSType: "cgroup", SuperOpts: "rw,pids"},
		{ID: 40, Parent: 22, Dev: "8:1", Root: "/home/u/cfg dir", Point: "/mnt/with space", FSType: "ext4", SuperOpts: "rw"},
		{ID: 43, Parent: 22, Dev: "0:40", Root: "/", Point: "/home/u/no\u00a0break\r\v\f", FSType: "tmpfs", SuperOpts: "rw"},
	}
	if got := Parse([]byte(text)); !reflect.DeepEqual(got, want) {
		t.Errorf("Parse:\n got %+v\nwant %+v", got, want)
	}
}

func TestUnescape(t *testing.T) {
	for in, want := range map[string]string{
		`/plain`:                  `/plain`,
		`/mnt/with\040space\134x`: `/mnt/with space\x`,
		`/tab\011nl\012`:          "/tab\tnl\n",
		`/short\04`:               `/short\04`,
		`/not\9990octal`:          `/not\9990octal`,
		`/end\040`:                `/end `,
	} {
		if got := Unescape(in); got != want {
			t.Errorf("Unescape(%q) = %q, want %q", in, got, want)
		}
	}
}
