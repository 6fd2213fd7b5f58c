//go:build integration

package integration

import (
	"slices"
	"strings"
	"testing"
)

// fdProbe is a shell fragment that lists every descriptor the command can reach: those
// of each process whose /proc/PID/fd it may read (its shell, a child the shell starts,
// pid 1 should it ever be reachable), one line "fd /proc/PID/fd/N TARGET" each, plus
// "fd-dir /proc/PID/fd/N" when the descriptor is a directory. It first names the shell
// ("fd-shell PID") and the child ("fd-child PID"); the child is a sleep with its
// standard streams on /dev/null, so the descriptors it shows beyond 0-2 are the ones
// the shell's children inherit. The listing starts only once the child has exec'd
// sleep: until then the shell is setting up its streams (a background job's stdin is
// closed and reopened on /dev/null), and a listing in that gap misses its fd 0. The
// fragment ends with "fd-end".
const fdProbe = `sleep 300 </dev/null >/dev/null 2>&1 &
fdchild=$!
n=0
until [ "$(tr -d '\000' < /proc/$fdchild/cmdline 2>/dev/null)" = sleep300 ] || [ $n -ge 20000 ]; do n=$((n+1)); done
echo "fd-shell $$"
echo "fd-child $fdchild"
for f in /proc/[0-9]*/fd/*; do
  t=$(readlink "$f" 2>/dev/null) && echo "fd $f $t"
  [ -d "$f" ] && echo "fd-dir $f"
done
kill $fdchild 2>/dev/null
wait $fdchild 2>/dev/null
echo fd-end
`

// fdListing is what fdProbe printed.
type fdListing struct {
	shell, child string            // their pids
	targets      map[string]string // /proc/PID/fd/N -> where it leads
	dirs         []string          // /proc/PID/fd/N that are directories
}

// parseFDProbe reads fdProbe's lines out of out and fails the test unless the probe
// reached what it must: the shell's standard streams and the child's. A probe that
// lists nothing proves nothing.
func parseFDProbe(t *testing.T, out string) fdListing {
	t.Helper()
	l := fdListing{targets: map[string]string{}}
	ended := false
	for _, line := range strings.Split(out, "\n") {
		kind, rest, _ := strings.Cut(line, " ")
		switch kind {
		case "fd-shell":
			l.shell = rest
		case "fd-child":
			l.child = rest
		case "fd":
			path, target, _ := strings.Cut(rest, " ")
			l.targets[path] = target
		case "fd-dir":
			l.dirs = append(l.dirs, rest)
		case "fd-end":
			ended = true
		}
	}
	if !ended || l.shell == "" || l.child == "" {
		t.Fatalf("the descriptor probe did not run to its end:\n%s", out)
	}
	for _, pid := range []string{l.shell, l.child} {
		for _, fd := range []string{"0", "1", "2"} {
			if _, ok := l.targets["/proc/"+pid+"/fd/"+fd]; !ok {
				t.Fatalf("the descriptor probe did not list /proc/%s/fd/%s (shell %s, child %s): it would pass without seeing anything:\n%s", pid, fd, l.shell, l.child, out)
			}
		}
	}
	return l
}

// leadingTo returns the descriptors whose target satisfies match, as "PATH -> TARGET".
func (l fdListing) leadingTo(match func(target string) bool) []string {
	var out []string
	for p, target := range l.targets {
		if match(target) {
			out = append(out, p+" -> "+target)
		}
	}
	slices.Sort(out)
	return out
}
