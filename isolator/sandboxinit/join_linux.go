package sandboxinit

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/devsandbox/devsandbox/isolator/cgroup"
)

// joinMain is the join step (cgroup.JoinArg): it moves this process into the
// session cgroups named by their cgroup.procs files and execs the program after
// "--" (bwrap, or the egress prefix that starts it). Nothing of the sandbox exists
// yet, so everything it will hold starts inside. A failure is reported on the
// readiness descriptor, and the program never runs.
func joinMain(args []string, stderr io.Writer) int {
	report := -1
	var procs []string
	for len(args) > 0 && args[0] != "--" {
		if v, ok := strings.CutPrefix(args[0], "--report-fd="); ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				say(stderr, "devsandbox-init", "bad %s", args[0])
				return ExitSetupFailed
			}
			report = n
		} else {
			procs = append(procs, args[0])
		}
		args = args[1:]
	}
	failed := func(msg string) int {
		say(stderr, "devsandbox-init", "%s", msg)
		if report >= 0 {
			_ = Fail(report, msg)
		}
		return ExitSetupFailed
	}
	if len(args) < 2 || len(procs) == 0 {
		return failed(cgroup.JoinArg + ": no cgroup or no program")
	}
	argv := args[1:]
	if err := cgroup.Join(procs); err != nil {
		return failed(err.Error())
	}
	path, err := exec.LookPath(argv[0])
	if err != nil {
		return failed(fmt.Sprintf("starting %s in the session cgroup: %v", argv[0], err))
	}
	err = unix.Exec(path, argv, os.Environ())
	return failed(fmt.Sprintf("starting %s in the session cgroup: %v", argv[0], err))
}
