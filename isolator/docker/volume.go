package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"

	dockercontainer "github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/api/types/volume"

	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/isolator/container"
)

// ensureHomeVolume creates the named volume backing the home on a remote engine (or
// Docker Desktop) and gives it to the user, once, when it creates it: a new volume is
// root's, and the sandbox runs without the capability to change that.
func (b *Isolator) ensureHomeVolume(ctx context.Context, e Engine, p *isolator.Plan, opts Options) error {
	vols, err := e.VolumeList(ctx, volume.ListOptions{Filters: filters.NewArgs(filters.Arg("name", opts.HomeVolume))})
	if err != nil {
		return fmt.Errorf("listing volumes: %w", err)
	}
	for _, v := range vols.Volumes {
		if v.Name == opts.HomeVolume {
			return nil
		}
	}
	if _, err := e.VolumeCreate(ctx, volume.CreateOptions{Name: opts.HomeVolume, Labels: map[string]string{
		LabelProject: p.Project.ID, LabelName: p.Project.Name, LabelDir: p.Project.Dir, LabelUser: fmt.Sprint(p.User.UID),
	}}); err != nil {
		return fmt.Errorf("creating the home volume %s: %w", opts.HomeVolume, err)
	}
	if err := giveHomeVolume(ctx, e, p, opts); err != nil {
		// Not left root's: the next run makes it again.
		_ = e.VolumeRemove(context.WithoutCancel(ctx), opts.HomeVolume, false)
		return err
	}
	return nil
}

// giveHomeVolume gives the new home volume to the sandbox's user, mode 0700.
func giveHomeVolume(ctx context.Context, e Engine, p *isolator.Plan, opts Options) error {
	// Through a container of the derived image that is created, never started (none
	// of the image's programs runs, as root or at all), with the volume at /v, and an
	// archive of the one directory entry the engine unpacks onto the volume's root, as
	// it unpacks the mask's and content volumes' files.
	uid, gid := p.User.InContainer()
	cfg := &dockercontainer.Config{
		Image:       opts.Image,
		Entrypoint:  []string{container.InitPath},
		Labels:      ownLabels(map[string]string{LabelProject: p.Project.ID, LabelUser: fmt.Sprint(p.User.UID)}),
		Healthcheck: noHealthcheck(),
		// Like every container of devsandbox's without a network (spec.go).
		NetworkDisabled: true,
	}
	hc := &dockercontainer.HostConfig{
		NetworkMode: "none",
		Mounts:      []mount.Mount{{Type: mount.TypeVolume, Source: opts.HomeVolume, Target: "/v"}},
	}
	c, err := e.ContainerCreate(ctx, cfg, hc, nil, nil, "")
	if err != nil {
		return fmt.Errorf("preparing the home volume %s: %w", opts.HomeVolume, err)
	}
	defer func() {
		_ = e.ContainerRemove(context.WithoutCancel(ctx), c.ID, dockercontainer.RemoveOptions{Force: true, RemoveVolumes: true})
	}()
	if err := e.CopyToContainer(ctx, c.ID, "/", bytes.NewReader(homeVolumeTar(uid, gid)), dockercontainer.CopyToContainerOptions{}); err != nil {
		return fmt.Errorf("preparing the home volume %s: giving it to uid %d: %w", opts.HomeVolume, uid, err)
	}
	return nil
}

// homeVolumeTar is the archive that gives the home volume, unpacked at / with the
// volume at /v, to uid:gid, mode 0700: its one directory entry. Pure.
func homeVolumeTar(uid, gid int) []byte {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	_ = tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: "v/", Mode: 0o700, Uid: uid, Gid: gid, Format: tar.FormatPAX})
	_ = tw.Close()
	return buf.Bytes()
}
