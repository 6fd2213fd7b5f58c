package docker

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"time"

	dockercontainer "github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/volume"

	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/isolator/container"
)

// The engine-side source of generated files the image cannot carry, because a mount
// covers where they go (a tool's file below the home: the ssh tool's ~/.ssh/config):
// one volume per project and content, named by a hash of the content, holding it as
// one file, the sandbox user's (git refuses a worktree whose `.git` file, delivered
// as content, is another user's), mode 0444, bound read-only by its path on the engine's machine
// (the volume's mount point), as the mask file is. Nothing of this host's is bound. A
// volume is made when a run needs it and the engine has none, and is labelled for the
// user and project: the sweep removes one no container binds (see contentLeftovers).
const (
	roleContent = "content" // LabelRole of a content volume
	contentFile = "content"
	// localVolumes is where a local engine keeps its volumes, for --dry-run (a run
	// asks the engine).
	localVolumes = "/var/lib/docker/volumes/"
)

// A kept container's Data that changes from session to session (egress allowlist:
// /etc/hosts with the names resolved at launch) is a file of a volume of the engine's
// per project and target, root's, mode 0644 (writable by root without
// CAP_DAC_OVERRIDE, by no one else), bound read-only by its path like a content
// file: the spec stays the same. Each session's firewall helper rewrites it in place
// (wire.WriteInPlaceArg) with the rules, before the session's command starts.
const roleVolatile = "volatile" // LabelRole of a kept container's volatile volume

// volatileVolume is the name of project's volume holding the data at dst.
func volatileVolume(project, dst string) string {
	sum := sha256.Sum256([]byte(dst))
	return "devsandbox-" + project + "-volatile-" + hex.EncodeToString(sum[:8])
}

// volatileSource is contentSource for a kept container's volatile data.
func volatileSource(p *isolator.Plan, o Options) func(string) string {
	return func(dst string) string {
		name := volatileVolume(p.Project.Name, dst)
		if s, ok := o.ContentSources[name]; ok {
			return s
		}
		return localVolumes + name + "/_data/" + contentFile
	}
}

// contentVolume is the name of project's volume holding content.
func contentVolume(project string, content []byte, containerRoot bool) string {
	// "user:" keeps the names of the root-owned volumes earlier versions made
	// from being taken for these; "user0:" names those whose file is the
	// container's uid 0 (a rootless engine's command, isolator.User.ContainerRoot),
	// which earlier versions made the user's uid's (a subordinate id there, whose
	// file ssh refused as "Bad owner").
	prefix := "user:"
	if containerRoot {
		prefix = "user0:"
	}
	sum := sha256.Sum256(append([]byte(prefix), content...))
	return "devsandbox-" + project + "-content-" + hex.EncodeToString(sum[:8])
}

// isContentVolume reports whether name is a content volume's.
func isContentVolume(name string) bool {
	return strings.HasPrefix(name, "devsandbox-") && (strings.Contains(name, "-content-") || strings.Contains(name, "-volatile-"))
}

// contentSource returns the engine-side path of content's file for p with o: the one
// the engine reported (o.ContentSources), or where a local engine keeps it.
func contentSource(p *isolator.Plan, o Options) func([]byte) string {
	return func(content []byte) string {
		name := contentVolume(p.Project.Name, content, p.User.ContainerRoot)
		if s, ok := o.ContentSources[name]; ok {
			return s
		}
		return localVolumes + name + "/_data/" + contentFile
	}
}

// contentSources makes sure the engine has a volume for each of l's contents and
// volatile files, making the ones it has not, and returns where their files are on
// the engine's machine. The volumes are asked for together (each usually only an
// inspect).
func contentSources(ctx context.Context, e Engine, p *isolator.Plan, image string, l *container.Layout) (map[string]string, error) {
	asked := map[string]*future[string]{}
	var order []string
	ask := func(name, what, role string, content []byte, mode int64, uid, gid int) {
		if asked[name] != nil {
			return
		}
		labels := map[string]string{LabelRole: role, LabelUser: fmt.Sprint(p.User.UID), LabelProject: p.Project.ID, LabelName: p.Project.Name}
		asked[name] = fetch(func() (string, error) {
			return fileVolume(ctx, e, volumeLock(p), image, what, name, labels, contentFile, content, mode, uid, gid)
		})
		order = append(order, name)
	}
	uid, gid := p.User.InContainer()
	for _, f := range l.Contents {
		ask(contentVolume(p.Project.Name, f.Content, p.User.ContainerRoot), "the file "+f.Path, roleContent, f.Content, 0o444, uid, gid)
	}
	for _, f := range l.Volatile {
		ask(volatileVolume(p.Project.Name, f.Path), "the file "+f.Path, roleVolatile, f.Content, 0o644, 0, 0)
	}
	out := map[string]string{}
	var first error
	for _, name := range order {
		src, err := asked[name].get()
		if err != nil && first == nil {
			first = err
		}
		out[name] = src
	}
	if first != nil {
		return nil, first
	}
	return out, nil
}

// contentLeftovers are the content and volatile volumes of the user's (filtered by
// mine) that no container binds, and that are minAge old or older (the sweep leaves a
// younger one alone: it may be a concurrent run's, between making it and creating its
// container; a run that lost its volume all the same fails before it starts, telling
// to run again). Such a
// volume is bound by path, not mounted as a volume: the engine counts it unused, so
// its use is read from the containers' binds, stopped and kept ones included.
func contentLeftovers(ctx context.Context, e Engine, mine filters.Args, now time.Time, minAge time.Duration) ([]*volume.Volume, error) {
	vs, err := e.VolumeList(ctx, volume.ListOptions{Filters: mine})
	if err != nil {
		return nil, err
	}
	vs.Volumes = slices.DeleteFunc(vs.Volumes, func(v *volume.Volume) bool {
		return v == nil || (v.Labels[LabelRole] != roleContent && v.Labels[LabelRole] != roleVolatile)
	})
	if len(vs.Volumes) == 0 {
		return nil, nil
	}
	cs, err := e.ContainerList(ctx, dockercontainer.ListOptions{All: true, Filters: mine})
	if err != nil {
		return nil, err
	}
	var out []*volume.Volume
	for _, v := range vs.Volumes {
		if leftoverContent(v, cs, now, minAge) {
			out = append(out, v)
		}
	}
	return out, nil
}

// leftoverContent reports whether content volume v is bound by no container of cs
// and is minAge old or older. Pure.
func leftoverContent(v *volume.Volume, cs []dockercontainer.Summary, now time.Time, minAge time.Duration) bool {
	if v.Mountpoint == "" {
		return false
	}
	for _, c := range cs {
		for _, m := range c.Mounts {
			if m.Source == v.Mountpoint || strings.HasPrefix(m.Source, v.Mountpoint+"/") {
				return false
			}
		}
	}
	created, err := time.Parse(time.RFC3339, v.CreatedAt)
	return err == nil && now.Sub(created) >= minAge
}
