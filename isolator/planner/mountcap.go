package planner

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/devsandbox/devsandbox/isolator"
)

// maxMounts is the most mounts a plan may have. Most come from files a sandbox can
// create in the project (masked files, the files host tools run, the anchors of the
// directories above them), so without a bound a sandbox could make its user's next
// launch crawl or fail: bubblewrap 0.8 rereads the mount table for every mount, which
// makes a launch take seconds for a thousand mounts, and it refuses more than 9,000
// arguments (about 3,000 mounts). A typical plan has well under a hundred.
const maxMounts = 1000

// errTooManyMounts is the error for a plan of the mounts ms, more than maxMounts: it
// names where they come from, the most frequent first, with the first paths of each,
// and what to do. The launch is refused rather than made with part of the
// protections.
func errTooManyMounts(dir, home string, ms []isolator.Mount) error {
	type group struct {
		why   string
		n     int
		paths []string
	}
	var gs []*group
	by := map[string]*group{}
	for _, m := range ms {
		g := by[m.Why]
		if g == nil {
			g = &group{why: m.Why}
			by[m.Why] = g
			gs = append(gs, g)
		}
		g.n++
		if len(g.paths) < 3 {
			g.paths = append(g.paths, m.Target(home))
		}
	}
	slices.SortStableFunc(gs, func(a, b *group) int { return cmp.Compare(b.n, a.n) })
	var parts []string
	for _, g := range gs[:min(len(gs), 3)] {
		parts = append(parts, fmt.Sprintf("%d %q (%s, …)", g.n, g.why, strings.Join(g.paths, ", ")))
	}
	return fmt.Errorf("%w: the launch would make at least %d mounts, more than the %d devsandbox allows: %s. A sandboxed program can create files in %s to slow down or break the next launch: review them, remove those you did not write, and launch again; to exempt a directory of real ones from sandbox.mask_files, name it in sandbox.mask_skip",
		isolator.ErrProtection, len(ms), maxMounts, strings.Join(parts, "; "), dir)
}

// capScanned refuses a project whose scan found more files to mask or protect than a
// plan may mount, before the planner anchors each (which costs time per mount
// already planned).
func capScanned(dir, home string, s scanned) error {
	if len(s.masked)+len(s.subdir) <= maxMounts {
		return nil
	}
	ms := make([]isolator.Mount, 0, len(s.masked)+len(s.subdir))
	for _, f := range s.masked {
		ms = append(ms, isolator.Mount{Dest: f, Why: "sandbox.mask_files"})
	}
	for _, f := range s.subdir {
		ms = append(ms, isolator.Mount{Dest: f, Why: "run by tools on the host"})
	}
	return errTooManyMounts(dir, home, ms)
}

// refuseNotUTF8 refuses a mount below the project dir whose path there is not UTF-8:
// a sandbox can create such names, and docker's and podman's JSON APIs carry paths
// as JSON strings, where Go's encoder replaces the invalid bytes with U+FFFD. The
// engine would mask or protect another path (one the sandbox can create too) and
// leave the file as it is.
func refuseNotUTF8(dir, home string, ms []isolator.Mount) error {
	prefix := dir + "/"
	for _, m := range ms {
		for _, p := range []string{m.Source, m.Target(home)} {
			if rel, ok := strings.CutPrefix(p, prefix); ok && !utf8.ValidString(rel) {
				return fmt.Errorf("%w: %q (%s) is not a UTF-8 name; the container engines' APIs cannot name it, so it could not be masked or protected there. Rename it in %s (a sandboxed program may have made it)", isolator.ErrProtection, p, m.Why, dir)
			}
		}
	}
	return nil
}
