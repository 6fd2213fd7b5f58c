package bwrap

import (
	"errors"
	"os"
	"testing"
	"time"

	"github.com/devsandbox/devsandbox/isolator"
)

// Before 0.13 the row estimates the scans' cost and says what cuts it; from 0.13 it
// says the scans do not apply. Never a warning or a failure.
func TestMountTableRow(t *testing.T) {
	for _, tt := range []struct {
		version string
		err     error
		want    string
	}{
		{"bubblewrap 0.8.0", nil, "522 mounts; one read of /proc/self/mountinfo takes 0.80 ms here and bubblewrap 0.8.0 reads it after each of its mounts " +
			"(about 19 per launch with no tools, about 64 with several agents and their tools): about 15.2 to 51.2 ms per launch. To cut it: bubblewrap 0.13 or later (it does not read the table), or fewer host mounts"},
		{"bubblewrap 0.12.0", nil, "522 mounts; one read of /proc/self/mountinfo takes 0.80 ms here and bubblewrap 0.12.0 reads it after each of its mounts " +
			"(about 19 per launch with no tools, about 64 with several agents and their tools): about 15.2 to 51.2 ms per launch. To cut it: bubblewrap 0.13 or later (it does not read the table), or fewer host mounts"},
		{"", nil, "522 mounts; one read of /proc/self/mountinfo takes 0.80 ms here and an unknown bubblewrap version reads it after each of its mounts " +
			"(about 19 per launch with no tools, about 64 with several agents and their tools): about 15.2 to 51.2 ms per launch. To cut it: bubblewrap 0.13 or later (it does not read the table), or fewer host mounts"},
		{"bubblewrap 0.13.0", nil, "522 mounts; bubblewrap 0.13.0 does not read the mount table after each mount, so its size does not slow launches"},
		{"bubblewrap 0.13.1", nil, "522 mounts; bubblewrap 0.13.1 does not read the mount table after each mount, so its size does not slow launches"},
		{"bubblewrap 0.8.0", &os.PathError{Op: "open", Path: "/proc/self/mountinfo", Err: errors.New("permission denied")},
			"cannot read /proc/self/mountinfo: permission denied"},
	} {
		r := mountTableRow(tt.version, 522, 800*time.Microsecond, tt.err)
		want := isolator.Check{Name: "host mount table (launch cost)", Status: isolator.Status{State: isolator.Active}, Detail: tt.want}
		if r != want {
			t.Errorf("%q: got\n%+v\nwant\n%+v", tt.version, r, want)
		}
	}
}
