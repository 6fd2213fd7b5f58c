package docker

import (
	"context"
	"fmt"

	dockercontainer "github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/volume"

	"github.com/devsandbox/devsandbox/isolator"
)

// ensureHomeVolume creates the named volume backing the home on a remote engine (or
// Docker Desktop) and gives it to the user: a new volume is root's, and the sandbox
// runs without the capability to change that. A short root container with only
// CAP_CHOWN does it once, when the volume is created.
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
	uid, gid := p.User.InContainer()
	cfg := &dockercontainer.Config{
		Image:       opts.Image,
		User:        "0:0",
		Entrypoint:  []string{"/bin/sh", "-c", fmt.Sprintf("chown %d:%d /v && chmod 0700 /v", uid, gid)},
		Labels:      map[string]string{LabelProject: p.Project.ID, LabelUser: fmt.Sprint(p.User.UID)},
		Healthcheck: noHealthcheck(),
	}
	hc := &dockercontainer.HostConfig{
		NetworkMode: "none",
		CapDrop:     []string{"ALL"},
		CapAdd:      []string{"CHOWN", "FOWNER"},
		SecurityOpt: []string{"no-new-privileges"},
		Binds:       []string{opts.HomeVolume + ":/v"},
	}
	c, err := e.ContainerCreate(ctx, cfg, hc, nil, nil, "")
	if err != nil {
		return fmt.Errorf("preparing the home volume %s: %w", opts.HomeVolume, err)
	}
	defer func() {
		_ = e.ContainerRemove(context.WithoutCancel(ctx), c.ID, dockercontainer.RemoveOptions{Force: true, RemoveVolumes: true})
	}()
	waitc, errc := e.ContainerWait(ctx, c.ID, dockercontainer.WaitConditionNextExit)
	if err := e.ContainerStart(ctx, c.ID, dockercontainer.StartOptions{}); err != nil {
		return fmt.Errorf("preparing the home volume %s: %w", opts.HomeVolume, err)
	}
	select {
	case r := <-waitc:
		if r.StatusCode != 0 {
			return fmt.Errorf("preparing the home volume %s: chown exited %d (the image needs /bin/sh and chown)", opts.HomeVolume, r.StatusCode)
		}
	case err := <-errc:
		return fmt.Errorf("preparing the home volume %s: %w", opts.HomeVolume, err)
	}
	return nil
}
