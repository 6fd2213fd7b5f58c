//go:build launchprofile

package launchprof

import (
	"bytes"
	"os"
	"runtime"
	"runtime/pprof"
)

// Env names the directory a profiling build writes its profiles to. Without it, a
// process writes to $HOME/.launch-profiles when that directory exists: the bwrap init
// gets the sandbox's environment, not devsandbox's, and the sandbox home is
// writable and outside the project (whose files a launch scans).
const Env = "DEVSANDBOX_PROFILE_DIR"

// hz is the sampling rate asked for. runtime/pprof's own 100 Hz gives a launch's
// process well under one sample; Linux delivers the runtime's per-thread CPU
// timers at most once per scheduler tick (CONFIG_HZ, 250 on the test machines), so
// asking for more costs nothing and takes what the kernel gives.
const hz = 1000

var (
	dir string
	buf *bytes.Buffer
)

// Start starts the CPU profile of this process when there is a directory for it. The
// profile is kept in memory until Stop, which writes it to a new file there: the
// bwrap init closes every descriptor it inherited or opened before its checks (the
// runtime's epoll descriptor with them, had a file been opened here). The runtime
// prints that the rate cannot be changed when runtime/pprof sets its own 100 Hz
// after this rate: the first rate is kept.
func Start() {
	dir = os.Getenv(Env)
	if dir == "" {
		dir = os.Getenv("HOME") + "/.launch-profiles"
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			return
		}
	}
	buf = new(bytes.Buffer)
	runtime.SetCPUProfileRate(hz)
	if err := pprof.StartCPUProfile(buf); err != nil {
		buf = nil
	}
}

// Stop ends the profile and writes it out; call it before os.Exit.
func Stop() {
	if buf == nil {
		return
	}
	pprof.StopCPUProfile()
	if f, err := os.CreateTemp(dir, "cpu-*.pprof"); err == nil {
		_, _ = f.Write(buf.Bytes())
		_ = f.Close()
	}
	buf = nil
}
