package bwrap

import (
	"math"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// TestLoadPerCPUAsProcLoadavg holds the load gate's sysinfo(2) reading to what
// /proc/loadavg shows of the same kernel average: the kernel rounds it to two
// decimals there, and the average moves at most a little between the reads.
func TestLoadPerCPUAsProcLoadavg(t *testing.T) {
	for i := 0; i < 3; i++ {
		before := procLoad(t)
		got, ok := loadPerCPU()
		after := procLoad(t)
		if !ok {
			t.Fatal("loadPerCPU: no load average from sysinfo(2)")
		}
		lo, hi := math.Min(before, after)-0.006, math.Max(before, after)+0.006
		if l := got * float64(runtime.NumCPU()); l >= lo && l <= hi {
			return
		}
		t.Logf("loadPerCPU %.4f per CPU of %d, /proc/loadavg %.2f then %.2f", got, runtime.NumCPU(), before, after)
	}
	t.Fatal("loadPerCPU disagreed with /proc/loadavg in three tries")
}

func procLoad(t *testing.T) float64 {
	t.Helper()
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		t.Fatalf("/proc/loadavg: %q", b)
	}
	l, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		t.Fatal(err)
	}
	return l
}
