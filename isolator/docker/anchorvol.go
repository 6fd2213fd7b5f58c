package docker

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"path/filepath"
	"slices"

	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/api/types/volume"

	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/isolator/container"
	"github.com/devsandbox/devsandbox/isolator/docker/engineaddr"
)

// An anchor (container.Mount.Anchor: a directory a mask lies in, bound onto itself)
// is mounted one of two ways, never as a bind of its path, which runc resolves anew
// after a concurrent session may have swapped it for a symlink:
//
//   - On an engine with API 1.45 or newer (Docker 26), as the sub-path of a named
//     volume of the engine's local driver that binds the top directory the anchor lies
//     in (the project, a read-write bind: a path no sandbox can swap, since none can
//     write its parent). The engine opens the sub-path below the volume's directory
//     without following a symlink that leads out of it and mounts what it opened
//     (moby's internal/safepath: openat2 with RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS after
//     resolving links that stay inside), so a swap makes the start fail and nothing is
//     made where the link leads. This needs nothing of this host: Docker Desktop,
//     remote and rootless engines do it alike.
//   - On an older engine that shares this host's mount namespace, from the directory
//     Run pinned (anchorMount, Options.Anchors). An older engine that does not (a
//     tcp:// one, any engine on macOS) refuses the plan (engineaddr.RefuseAnchors).
//
// A link that stays inside the top directory the engine follows: the anchor then
// shows that other directory of the project, and the mask's mount point is made in
// it. On this host's kernel the init finds the directory is not the one pinned and
// stops the run (125); elsewhere nothing leaves the project either way.

// SubpathAPI is the first Engine API version with VolumeOptions.Subpath.
const SubpathAPI = engineaddr.SubpathAPI

// engineAPI returns the newest Engine API version e's engine speaks, from its ping
// (the API-Version header: the version ServerVersion reports, without the work the
// engine does for that request); an engine whose ping has none is asked its version.
// This client speaks a newer API than SubpathAPI, so a version from SubpathAPI on is
// one the run's requests are sent in too.
func engineAPI(ctx context.Context, e Engine) (string, error) {
	pong, err := e.Ping(ctx)
	if err != nil {
		return "", err
	}
	if pong.APIVersion != "" {
		return pong.APIVersion, nil
	}
	v, err := e.ServerVersion(ctx)
	return v.APIVersion, err
}

// roleAnchor is LabelRole of an anchor's top-directory volume.
const roleAnchor = "anchor"

// anchorRoot is the top directory an anchor lies in and the named volume that binds
// it.
type anchorRoot struct {
	Dir, Volume string
}

// topDir returns the outermost directory among p's writable ones (isolator.Writable)
// that src lies strictly below: the source of the volume an anchor at src is a
// sub-path of. "" when there is none.
func topDir(p *isolator.Plan, src string) string {
	top := ""
	for _, r := range isolator.Writable(p) {
		if r == "" || r == src || !isolator.Within(src, r) {
			continue
		}
		if top == "" || len(r) < len(top) {
			top = r
		}
	}
	return top
}

// anchorVolumeName is the name of the volume that binds dir for project p: one per
// directory, shared by the project's sessions and its kept container.
func anchorVolumeName(p *isolator.Plan, dir string) string {
	sum := sha256.Sum256([]byte(dir))
	return "devsandbox-" + p.Project.Name + "-root-" + hex.EncodeToString(sum[:6])
}

// anchorVolumeOptions are what the volume of r is created with: the local driver
// binding r.Dir, labelled as the project's (sandboxes rm removes it) with its role
// (the sweep removes it once no container has used it for a while). A run does not
// remove it at its end: a concurrent session of the project may be about to mount
// it, and the engine would make an empty volume of that name for it.
func anchorVolumeOptions(p *isolator.Plan, r anchorRoot) volume.CreateOptions {
	labels := projectLabels(p)
	labels[LabelRole] = roleAnchor
	labels[LabelAnchor] = r.Dir
	return volume.CreateOptions{Name: r.Volume, Driver: "local", DriverOpts: anchorDriverOpts(r.Dir), Labels: labels}
}

func anchorDriverOpts(dir string) map[string]string {
	return map[string]string{"type": "none", "o": "bind", "device": dir}
}

// subpathMount mounts m's source as the sub-path of root's volume. The mount carries
// the volume's driver options and labels too: the engine makes the volume from them
// if it is gone by then (a sweep between makeAnchorVolumes and the container's
// creation), and ignores them for one that exists (which makeAnchorVolumes checked).
func subpathMount(p *isolator.Plan, m container.Mount, root anchorRoot) (mount.Mount, error) {
	rel, err := filepath.Rel(root.Dir, m.Source)
	if err != nil || rel == "." || !filepath.IsLocal(rel) {
		return mount.Mount{}, fmt.Errorf("%w: the directory %s, which a sandbox can swap for a symlink, is not below %s", isolator.ErrProtection, m.Source, root.Dir)
	}
	o := anchorVolumeOptions(p, root)
	return mount.Mount{Type: mount.TypeVolume, Source: root.Volume, Target: m.Target, ReadOnly: m.ReadOnly, VolumeOptions: &mount.VolumeOptions{
		NoCopy:       true,
		Subpath:      rel,
		Labels:       o.Labels,
		DriverConfig: &mount.Driver{Name: o.Driver, Options: o.DriverOpts},
	}}, nil
}

// makeAnchorVolumes creates the volumes of roots (an existing one is the engine's
// answer as it is) and checks each binds the directory it is named for: a volume of
// that name made otherwise (another driver, another device) would show something
// else below the mask.
func makeAnchorVolumes(ctx context.Context, e Engine, p *isolator.Plan, roots []anchorRoot) error {
	for _, r := range roots {
		v, err := e.VolumeCreate(ctx, anchorVolumeOptions(p, r))
		if err != nil {
			return fmt.Errorf("%w: creating the volume %s of %s (a mask below it is mounted through it): %w", isolator.ErrProtection, r.Volume, r.Dir, err)
		}
		if v.Driver != "local" || !maps.Equal(v.Options, anchorDriverOpts(r.Dir)) {
			return fmt.Errorf("%w: the engine's volume %s does not bind %s (driver %q, options %v); remove it (docker volume rm %s) and run again", isolator.ErrProtection, r.Volume, r.Dir, v.Driver, v.Options, r.Volume)
		}
	}
	return nil
}

// rootsAhead are the anchors' volumes being made (makeAnchorVolumes) ahead of the
// container, by root.
type rootsAhead map[anchorRoot]*future[struct{}]

// makeRootsAhead starts making the volumes of l's anchors (layoutRoots).
func makeRootsAhead(ctx context.Context, e Engine, p *isolator.Plan, l *container.Layout) rootsAhead {
	a := rootsAhead{}
	for _, r := range layoutRoots(p, l) {
		a[r] = fetch(func() (struct{}, error) { return struct{}{}, makeAnchorVolumes(ctx, e, p, []anchorRoot{r}) })
	}
	return a
}

// made returns once each of roots was made and checked, ahead or now, or with the
// first failure: the container that mounts them is created only then.
func (a rootsAhead) made(ctx context.Context, e Engine, p *isolator.Plan, roots []anchorRoot) error {
	for _, r := range roots {
		var err error
		if f := a[r]; f != nil {
			_, err = f.get()
		} else {
			err = makeAnchorVolumes(ctx, e, p, []anchorRoot{r})
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// wait returns once every volume made ahead was answered (so nothing of the run's is
// at work when it returns).
func (a rootsAhead) wait() {
	for _, f := range a {
		_, _ = f.get()
	}
}

// layoutRoots are the volumes the directory anchors of l (drawn for p) are sub-paths
// of, as translate names them; an anchor in no writable directory is left to
// translate, which refuses it. Pure.
func layoutRoots(p *isolator.Plan, l *container.Layout) []anchorRoot {
	var out []anchorRoot
	for _, m := range l.Mounts {
		if m.Type != container.Bind || !m.Anchor {
			continue
		}
		if top := topDir(p, m.Source); top != "" {
			r := anchorRoot{Dir: top, Volume: anchorVolumeName(p, top)}
			if !slices.Contains(out, r) {
				out = append(out, r)
			}
		}
	}
	return out
}

// plansAnchors reports whether p has an anchor.
func plansAnchors(p *isolator.Plan) bool {
	for _, m := range p.Mounts {
		if m.Kind == isolator.Bind && m.Anchor {
			return true
		}
	}
	return false
}
