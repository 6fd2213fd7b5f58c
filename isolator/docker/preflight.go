package docker

import (
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/isolator/container"
)

// unseenSources are the engines' refusals of a bind whose source they cannot see: the
// path is not on the engine's machine (a remote engine, this machine's /tmp for an
// engine in a VM), or Docker Desktop does not share it. Binds are made with mounts of
// type bind, which an engine refuses when the source is missing, rather than create
// an empty directory in its place as a plain -v bind would. Compiled on the first
// refusal, not at package init, which every start of devsandbox-docker pays (83
// allocations, 16 KB; issue 18).
var unseenSources = sync.OnceValue(func() []*regexp.Regexp {
	return []*regexp.Regexp{
		regexp.MustCompile(`bind source path does not exist: (/\S*)`),
		regexp.MustCompile(`Mounts denied:\s*The path (/\S*) is not shared`),
	}
})

// unseenPath is the bind source err, a ContainerCreate's, says the engine cannot
// see, or "".
func unseenPath(err error) string {
	for _, re := range unseenSources() {
		if m := re.FindStringSubmatch(err.Error()); m != nil {
			return strings.TrimRight(m[1], ".,;:")
		}
	}
	return ""
}

// unseen explains a ContainerCreate refused for a bind source the engine cannot see,
// naming the engine, the path, what it is for and the fix; it returns nil for other
// errors. Nothing was created, so nothing started.
func unseen(err error, addr Address, l *container.Layout) error {
	path := unseenPath(err)
	if path == "" {
		return nil
	}
	what := "a path the sandbox mounts"
	if l != nil {
		for _, m := range l.Mounts {
			if m.Type != container.Bind || m.Source != path {
				continue
			}
			switch {
			case m.Target == l.Home:
				what = "the sandbox home"
			case m.Target == m.Source && strings.HasPrefix(l.Workdir+"/", m.Target+"/"):
				what = "the project"
			case strings.HasPrefix(m.Target, "/etc/") || strings.HasPrefix(m.Target, "/run/"):
				what = "a file devsandbox generates in its state directory"
			default:
				what = "the mount at " + m.Target
			}
			break
		}
	}
	// A guess: a source removed on this host meanwhile gets the same answer.
	return &isolator.Guessed{
		Err: fmt.Errorf("%w: the docker engine refused the container: %w; the command did not run", isolator.ErrUnavailable, err),
		Msg: fmt.Sprintf("%v: the docker engine at %s (%s) cannot see %s, %s, on its machine; share the directory with the engine (Docker Desktop: Settings > Resources > File sharing), or run devsandbox where the engine runs; the command did not run",
			isolator.ErrUnavailable, addr.Host, addr.Origin, path, what),
	}
}
