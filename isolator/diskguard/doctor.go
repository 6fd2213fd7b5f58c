package diskguard

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/devsandbox/devsandbox/isolator"
)

// Free is what doctor reads of the file system holding a path: which one it is
// (st_dev) and the bytes available to an unprivileged user.
type Free struct {
	Dev   uint64
	Avail uint64
}

// reserveRow is the name of doctor's rows on the reserve.
const reserveRow = "disk reserve (sandbox.disk_reserve)"

// lowerFix is how to lower the reserve: a project may raise it, not lower it.
const lowerFix = "free space there, or lower sandbox.disk_reserve in your config file (\"0\" turns the guard off)"

// Rows are doctor's rows on the reserve: one per file system holding paths (the
// directories a run from here would watch, Watched), in paths' order, with its free
// space against reserve. A file system under the reserve fails (a run is refused
// before it starts), one with less than twice the reserve is warned of (a run that
// writes the difference there is stopped), and one whose free space cannot be read
// fails (a run is refused). A path that does not exist is left out, as Check leaves
// it. paths nil (no project here) gives one row saying what the reserve applies to.
// Pure: free reads the host.
func Rows(reserve uint64, paths []string, free func(string) (Free, error)) []isolator.Check {
	kept := "no reserve (sandbox.disk_reserve = \"0\"): a run may fill it"
	if reserve > 0 {
		kept = "reserve " + size(reserve)
	}
	if paths == nil {
		return []isolator.Check{{Name: reserveRow, Status: isolator.Status{State: isolator.Active},
			Detail: kept + " on each file system a run writes (the project, the sandbox home, the session /tmp, writable binds); doctor shows their free space where it knows the Plan a run from here gets (in a project whose configuration loads)"}}
	}
	type fs struct {
		free  Free
		paths []string
	}
	var order []*fs
	var rows []isolator.Check
	for _, p := range paths {
		f, err := free(p)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			if reserve > 0 {
				rows = append(rows, isolator.Check{Name: reserveRow, Status: isolator.Status{State: isolator.Unavailable,
					Reason: fmt.Sprintf("reading the free space of the file system holding %s: %v; a run from here is refused (a reserve that cannot be read is not kept)", p, err),
					Fix:    "make " + p + " readable to you, or set sandbox.disk_reserve = \"0\" in your config file"}})
			}
			continue
		}
		found := false
		for _, o := range order {
			if o.free.Dev == f.Dev {
				o.paths, found = append(o.paths, p), true
				break
			}
		}
		if !found {
			order = append(order, &fs{free: f, paths: []string{p}})
		}
	}
	for _, o := range order {
		where := fmt.Sprintf("%s available on the file system holding %s", size(o.free.Avail), strings.Join(o.paths, ", "))
		switch {
		case reserve > 0 && o.free.Avail < reserve:
			rows = append(rows, isolator.Check{Name: reserveRow, Status: isolator.Status{State: isolator.Unavailable,
				Reason: where + ", under the " + size(reserve) + " reserve: a run from here is refused before it starts (exit 125)", Fix: lowerFix}})
		case reserve > 0 && o.free.Avail-reserve < reserve:
			rows = append(rows, isolator.Check{Name: reserveRow, Status: isolator.Status{State: isolator.Warning,
				Reason: where + ", " + size(o.free.Avail-reserve) + " above the " + size(reserve) + " reserve: a run that writes that much there is stopped (exit 125)", Fix: lowerFix}})
		default:
			rows = append(rows, isolator.Check{Name: reserveRow, Status: isolator.Status{State: isolator.Active}, Detail: where + "; " + kept})
		}
	}
	return rows
}
