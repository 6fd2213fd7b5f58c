package docker

import (
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/docker/docker/api/types/mount"

	"github.com/devsandbox/devsandbox/isolator"
)

// makeMountPoints creates, as the user, the mount points that lie inside a read-write
// bind of a host directory (the sandbox home, the project) and do not exist yet. The
// engine would create them as root, leaving the user files in their own home they
// cannot remove. A path with a symlink on the way is left to the engine, which
// resolves it inside the container's root.
func makeMountPoints(ms []mount.Mount, tmpfs map[string]string) {
	type target struct {
		path string
		dir  bool
	}
	var targets []target
	for _, m := range ms {
		dir := m.Type != mount.TypeBind
		if !dir {
			fi, err := os.Stat(m.Source)
			dir = err == nil && fi.IsDir()
		}
		targets = append(targets, target{m.Target, dir})
	}
	for t := range tmpfs {
		targets = append(targets, target{t, true})
	}
	sort.Slice(targets, func(i, j int) bool { return targets[i].path < targets[j].path })
	for _, t := range targets {
		host := hostPathOf(t.path, ms, tmpfs)
		if host == "" {
			continue
		}
		if _, err := os.Lstat(host); err == nil {
			continue
		}
		parent := filepath.Dir(host)
		if err := os.MkdirAll(parent, 0o755); err != nil {
			continue
		}
		if real, err := filepath.EvalSymlinks(parent); err != nil || real != parent {
			continue
		}
		if t.dir {
			_ = os.Mkdir(host, 0o755)
		} else if f, err := os.OpenFile(host, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644); err == nil {
			f.Close()
		}
	}
}

// hostPathOf returns the host path that backs target: the deepest mount strictly
// above it must be a read-write bind, else "".
func hostPathOf(target string, ms []mount.Mount, tmpfs map[string]string) string {
	best, bestSrc := "", ""
	consider := func(t, src string) {
		if t != target && isolator.Within(target, t) && len(t) > len(best) {
			best, bestSrc = t, src
		}
	}
	for _, m := range ms {
		src := ""
		if m.Type == mount.TypeBind && !m.ReadOnly {
			src = m.Source
		}
		consider(m.Target, src)
	}
	for t := range tmpfs {
		consider(t, "")
	}
	if bestSrc == "" {
		return ""
	}
	return bestSrc + strings.TrimPrefix(target, best)
}
