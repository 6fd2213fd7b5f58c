package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"path"
	"path/filepath"
	"strings"

	cerrdefs "github.com/containerd/errdefs"
	dockercontainer "github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/api/types/volume"

	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/isolator/container"
)

// The engine-side source of file masks: an empty file, root's, mode 0444, alone in a
// volume of the engine's, bound read-only by its path on the engine's machine (the
// volume's mount point). Every engine has one of its own; nothing of this host's is
// bound. A write to a mask fails (read-only), a read finds it empty; the init checks
// both.
const (
	maskVolume = "devsandbox-mask"
	maskFile   = "empty"
)

// needsMask reports whether p masks a file.
func needsMask(p *isolator.Plan) bool {
	for _, m := range p.Mounts {
		if m.Kind == isolator.MaskFile {
			return true
		}
	}
	return false
}

// maskSource returns the engine-side path of the mask file, making the volume that
// holds it when the engine has none (the first run, or after `docker volume prune`),
// from image (any image: the container is never started).
func (b *Isolator) maskSource(ctx context.Context, e Engine, lock, image string) (string, error) {
	return fileVolume(ctx, e, lock, image, "the source of file masks", maskVolume, map[string]string{LabelRole: "mask"}, maskFile, nil, 0o444, 0, 0)
}

// volumeLock is the lock file (beside the derived images' cache, in devsandbox's
// state) that p's runs hold while they make a file volume, so that runs starting
// together on this machine do not copy the same file into the same volume at once
// (the engine's unpacking of one copy fails on the other's file, and the failed run
// would remove the volume the other uses). Runs of other machines on a shared engine
// are not held back by it.
func volumeLock(p *isolator.Plan) string {
	if p.StateDir == "" {
		return "" // a plan without devsandbox's state: nowhere to keep it
	}
	return filepath.Join(filepath.Dir(p.StateDir), "docker-volumes.lock")
}

// fileVolume returns the engine-side path of file in the volume name, labelled
// labels (its LabelRole tells devsandbox's own), making the volume with file (uid's
// and gid's, with mode, holding content) when the engine has none, from image (any image: the
// container is never started). what names the file in errors. A volume is made
// holding the lock file lock (volumeLock; "" for none), asked for again once held;
// one found is used once no run of this machine holds that lock (waitForMaker).
func fileVolume(ctx context.Context, e Engine, lock, image, what, name string, labels map[string]string, file string, content []byte, mode int64, uid, gid int) (string, error) {
	failed := func(format string, args ...any) error {
		return fmt.Errorf("%w: preparing %s (the volume %s) in the docker engine: %s; the command did not run", isolator.ErrProtection, what, name, fmt.Sprintf(format, args...))
	}
	role := labels[LabelRole]
	// have returns the file's path when the engine has the volume, or why it is not
	// usable; missing reports that the engine has none.
	have := func() (src string, missing bool, err error) {
		v, err := e.VolumeInspect(ctx, name)
		if err == nil && v.Labels[LabelRole] == role && v.Mountpoint == "" {
			err = fmt.Errorf("the engine reports no mount point for it")
		}
		if err == nil && v.Labels[LabelRole] == role && v.Labels[LabelUser] == labels[LabelUser] {
			return path.Join(v.Mountpoint, file), false, nil
		}
		if err == nil {
			return "", false, failed("a volume of that name that devsandbox did not make for this user is there; remove it (docker volume rm %s)", name)
		}
		if !cerrdefs.IsNotFound(err) {
			return "", false, failed("%v", err)
		}
		return "", true, nil
	}
	if src, missing, err := have(); !missing {
		// A run of this machine may have made it and still be copying its file in
		// (it holds the lock until the file is there): a container of it now would
		// fail on a missing bind source, and that run's volume be removed as
		// incomplete (seen in CI: runs of one project starting together).
		if err == nil && lock != "" {
			if werr := waitForMaker(lock); werr != nil {
				return "", failed("%v", werr)
			}
		}
		return src, err
	}
	if lock != "" {
		unlock, err := lockFile(lock)
		if err != nil {
			return "", failed("%v", err)
		}
		defer unlock()
		// Another run of this machine may have made it meanwhile.
		if src, missing, err := have(); !missing {
			return src, err
		}
	}
	v, err := e.VolumeCreate(ctx, volume.CreateOptions{Name: name, Labels: labels})
	if err != nil {
		return "", failed("%v", err)
	}
	// Until the file is in it, the volume is no source: a failure removes it.
	done := false
	defer func() {
		if !done {
			_ = e.VolumeRemove(context.WithoutCancel(ctx), name, false)
		}
	}()
	cfg := &dockercontainer.Config{Image: image, Entrypoint: []string{container.InitPath}, Labels: ownLabels(map[string]string{LabelRole: role}), Healthcheck: noHealthcheck(), NetworkDisabled: true}
	hc := &dockercontainer.HostConfig{NetworkMode: "none", Mounts: []mount.Mount{{Type: mount.TypeVolume, Source: name, Target: "/m"}}}
	c, err := e.ContainerCreate(ctx, cfg, hc, nil, nil, "")
	if cerrdefs.IsNotFound(err) {
		return "", fmt.Errorf("%w: the image %s is not on the docker engine (%v); build it with `devsandbox image build` (or pull it, or set docker.image / --image)", isolator.ErrUnavailable, image, err)
	}
	if err != nil {
		return "", failed("%v", err)
	}
	defer func() {
		_ = e.ContainerRemove(context.WithoutCancel(ctx), c.ID, dockercontainer.RemoveOptions{Force: true, RemoveVolumes: true})
	}()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	_ = tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: file, Mode: mode, Size: int64(len(content)), Uid: uid, Gid: gid, Format: tar.FormatPAX})
	_, _ = tw.Write(content)
	_ = tw.Close()
	if err := e.CopyToContainer(ctx, c.ID, "/m", &buf, dockercontainer.CopyToContainerOptions{}); err != nil {
		return "", failed("%v", err)
	}
	done = true
	return path.Join(v.Mountpoint, file), nil
}

// maskIncomplete explains the engine's refusal of a mask or content source it does
// not have (see contentvol.go): a volume without its file (a first run killed while it made it, a hand-made
// one). It removes the volume, so the next run makes it anew.
func (b *Isolator) maskIncomplete(ctx context.Context, e Engine, err error, l *container.Layout) error {
	if l == nil {
		return nil
	}
	for _, m := range l.Mounts {
		v := path.Base(path.Dir(path.Dir(m.Source)))
		if m.Type == container.Bind && (v == maskVolume || isContentVolume(v)) && strings.Contains(err.Error(), m.Source) {
			_ = e.VolumeRemove(context.WithoutCancel(ctx), v, false)
			return fmt.Errorf("%w: the docker engine's volume %s has no file (%v); devsandbox removed it, run again to make it anew; the command did not run", isolator.ErrUnavailable, v, err)
		}
	}
	return nil
}
