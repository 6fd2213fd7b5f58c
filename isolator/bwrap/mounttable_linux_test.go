package bwrap

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/devsandbox/devsandbox/isolator"
)

// Before 0.13 the row estimates the scans' cost and says what cuts it: from the reads
// a launch from here makes when doctor runs in a project, else as a range; from 0.13
// it says the scans do not apply. Never a warning or a failure.
func TestMountTableRow(t *testing.T) {
	for _, tt := range []struct {
		version string
		err     error
		planned int // the reads of a launch from here; 0: unknown
		mount   time.Duration
		want    string
	}{
		{"bubblewrap 0.8.0", nil, 0, 0, "522 mounts; one read of /proc/self/mountinfo takes 0.80 ms here and bubblewrap 0.8.0 reads it after each of its mounts " +
			"(about 18 per launch with no tools, about 64 with several agents and their tools): at least 14.4 to 51.2 ms per launch; bwrap also parses what it reads. To cut it: bubblewrap 0.13 or later (it does not read the table), or fewer host mounts"},
		{"bubblewrap 0.12.0", nil, 0, 0, "522 mounts; one read of /proc/self/mountinfo takes 0.80 ms here and bubblewrap 0.12.0 reads it after each of its mounts " +
			"(about 18 per launch with no tools, about 64 with several agents and their tools): at least 14.4 to 51.2 ms per launch; bwrap also parses what it reads. To cut it: bubblewrap 0.13 or later (it does not read the table), or fewer host mounts"},
		{"", nil, 0, 0, "522 mounts; one read of /proc/self/mountinfo takes 0.80 ms here and an unknown bubblewrap version reads it after each of its mounts " +
			"(about 18 per launch with no tools, about 64 with several agents and their tools): at least 14.4 to 51.2 ms per launch; bwrap also parses what it reads. To cut it: bubblewrap 0.13 or later (it does not read the table), or fewer host mounts"},
		{"bubblewrap 0.8.0", nil, 64, 0, "522 mounts; one read of /proc/self/mountinfo takes 0.80 ms here and bubblewrap 0.8.0 reads it after each of its mounts " +
			"(64 reads per launch here: at least 51.2 ms, for this project's view and tools; bwrap also parses what it reads). To cut it: bubblewrap 0.13 or later (it does not read the table), or fewer host mounts"},
		{"", nil, 18, 0, "522 mounts; one read of /proc/self/mountinfo takes 0.80 ms here and an unknown bubblewrap version reads it after each of its mounts " +
			"(18 reads per launch here: at least 14.4 ms, for this project's view and tools; bwrap also parses what it reads). To cut it: bubblewrap 0.13 or later (it does not read the table), or fewer host mounts"},
		{"bubblewrap 0.8.0", nil, 64, 1200 * time.Microsecond, "522 mounts; one read of /proc/self/mountinfo takes 0.80 ms here and bubblewrap 0.8.0 reads it after each of its mounts " +
			"(64 reads per launch here: about 76.8 ms, for this project's view and tools; each of bwrap's mounts, its read included, took 1.20 ms here (measured)). To cut it: bubblewrap 0.13 or later (it does not read the table), or fewer host mounts"},
		{"bubblewrap 0.8.0", nil, 0, 1200 * time.Microsecond, "522 mounts; one read of /proc/self/mountinfo takes 0.80 ms here and bubblewrap 0.8.0 reads it after each of its mounts " +
			"(about 18 per launch with no tools, about 64 with several agents and their tools): about 21.6 to 76.8 ms per launch; each of bwrap's mounts, its read included, took 1.20 ms here (measured). To cut it: bubblewrap 0.13 or later (it does not read the table), or fewer host mounts"},
		// A measurement below the bare read (noise) prices the read alone.
		{"bubblewrap 0.8.0", nil, 18, 500 * time.Microsecond, "522 mounts; one read of /proc/self/mountinfo takes 0.80 ms here and bubblewrap 0.8.0 reads it after each of its mounts " +
			"(18 reads per launch here: at least 14.4 ms, for this project's view and tools; bwrap also parses what it reads). To cut it: bubblewrap 0.13 or later (it does not read the table), or fewer host mounts"},
		{"bubblewrap 0.13.0", nil, 0, 0, "522 mounts; bubblewrap 0.13.0 does not read the mount table after each mount, so its size does not slow launches"},
		{"bubblewrap 0.13.1", nil, 64, 0, "522 mounts; bubblewrap 0.13.1 does not read the mount table after each mount, so its size does not slow launches"},
		{"bubblewrap 0.8.0", &os.PathError{Op: "open", Path: "/proc/self/mountinfo", Err: errors.New("permission denied")}, 64, 0,
			"cannot read /proc/self/mountinfo: permission denied"},
	} {
		r := mountTableRow(tt.version, 522, 800*time.Microsecond, tt.err, tt.planned, tt.mount)
		want := isolator.Check{Name: "host mount table (launch cost)", Status: isolator.Status{State: isolator.Active}, Detail: tt.want}
		if r != want {
			t.Errorf("%q, %d reads: got\n%+v\nwant\n%+v", tt.version, tt.planned, r, want)
		}
	}
}

// TestMountCost starts real sandboxes, as doctor does on a bubblewrap before 0.13:
// every launch must run (else the row would price a read alone without saying why),
// and the cost is never negative. Its size is the host's and the load's, not asserted.
func TestMountCost(t *testing.T) {
	bin, err := exec.LookPath("bwrap")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("bwrap is required in CI")
		}
		t.Skip("bwrap not installed")
	}
	d, ok := mountCost(context.Background(), bin)
	if !ok {
		t.Fatalf("a launch of %s failed", bin)
	}
	if d < 0 {
		t.Errorf("mount cost %v, want >= 0", d)
	}
	t.Logf("one more mount costs %s %v here", bin, d)
}

// A bubblewrap that cannot start its sandboxes gives no measurement.
func TestMountCostFails(t *testing.T) {
	if d, ok := mountCost(context.Background(), "/bin/false"); ok || d != 0 {
		t.Errorf("mountCost(/bin/false) = %v, %v; want 0, false", d, ok)
	}
}
