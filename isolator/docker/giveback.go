package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	cerrdefs "github.com/containerd/errdefs"
	dockercontainer "github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"

	"github.com/devsandbox/devsandbox/internal/rmtree"
	"github.com/devsandbox/devsandbox/isolator/container"
)

// The engine runs as root and resolves a mount's destination inside the container's
// root: when a concurrent session of the project swaps a directory on the way for a
// symlink after devsandbox made the mount point (Layout.MakeMountPoints), the engine
// makes the mount point where the link leads, root's, possibly in the sandbox home
// (the init then stops the run). The user cannot remove a file in a directory root
// made. giveBack hands such entries back to the user through the engine, so that the
// sandbox home can be removed as the user.

// rootEntry is an entry root owns below a directory: its path relative to it, and
// whether it is a directory.
type rootEntry struct {
	rel string
	dir bool
}

// rootOwned lists the directories and regular files below dir that root owns,
// parents first. It follows no symlink.
func rootOwned(dir string) ([]rootEntry, error) {
	var out []rootEntry
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return nil // what cannot be read is not ours to list
		}
		fi, err := d.Info()
		if err != nil {
			return nil
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok || st.Uid != 0 || !(fi.IsDir() || fi.Mode().IsRegular()) {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		out = append(out, rootEntry{rel: filepath.ToSlash(rel), dir: fi.IsDir()})
		return nil
	})
	return out, err
}

// giveBackTar is the archive that, unpacked over a directory by the engine (root),
// gives each of ents to uid:gid: an empty directory entry keeps a directory's content
// and takes its owner and mode; a regular file is replaced by an empty one (a mount
// point the engine made). Pure.
func giveBackTar(ents []rootEntry, uid, gid int) []byte {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range ents {
		h := &tar.Header{Typeflag: tar.TypeReg, Name: e.rel, Mode: 0o600, Uid: uid, Gid: gid, Format: tar.FormatPAX}
		if e.dir {
			h.Typeflag, h.Name, h.Mode = tar.TypeDir, e.rel+"/", 0o700
		}
		_ = tw.WriteHeader(h)
	}
	_ = tw.Close()
	return buf.Bytes()
}

// giveBack hands what root owns below dir (a host directory the engine binds by its
// path: the sandbox home) to uid:gid, through a container of image that is created,
// never started, with dir bound, and an archive the engine unpacks into it (as root,
// in the container's root: a link below dir leads nowhere else). It reports how many
// entries it handed back.
func giveBack(ctx context.Context, e Engine, image, dir string, uid, gid int) (int, error) {
	ents, err := rootOwned(dir)
	if err != nil || len(ents) == 0 {
		return 0, err
	}
	cfg := &dockercontainer.Config{Image: image, Entrypoint: []string{container.InitPath},
		Labels: ownLabels(map[string]string{LabelRole: "giveback", LabelUser: strconv.Itoa(uid)}), Healthcheck: noHealthcheck(), NetworkDisabled: true}
	hc := &dockercontainer.HostConfig{NetworkMode: "none", Mounts: []mount.Mount{{Type: mount.TypeBind, Source: dir, Target: "/h"}}}
	c, err := e.ContainerCreate(ctx, cfg, hc, nil, nil, "")
	if cerrdefs.IsNotFound(err) {
		return 0, fmt.Errorf("the image %s is not on the docker engine (%w); build it (devsandbox image build) or set docker.image", image, err)
	}
	if err != nil {
		return 0, err
	}
	defer func() {
		_ = e.ContainerRemove(context.WithoutCancel(ctx), c.ID, dockercontainer.RemoveOptions{Force: true, RemoveVolumes: true})
	}()
	if err := e.CopyToContainer(ctx, c.ID, "/h", bytes.NewReader(giveBackTar(ents, uid, gid)), dockercontainer.CopyToContainerOptions{}); err != nil {
		return 0, err
	}
	return len(ents), nil
}

// removeHome removes the sandbox home dir as the user (rmtree). What the user cannot
// remove there is handed back first: root's entries (a docker engine made them)
// through the engine (giveBack); entries of the user's subordinate uids (a rootless
// podman's runtime made them, krun) are removed in podman's user namespace
// (container.RemoveAsPodman), which reaches nothing outside dir either.
func (b *Isolator) removeHome(ctx context.Context, dir string) error {
	err := rmtree.RemoveAll(dir)
	if !errors.Is(err, fs.ErrPermission) {
		return err
	}
	failed := false
	if ents, _ := rootOwned(dir); len(ents) > 0 {
		if gerr := b.giveBackRoot(ctx, dir); gerr != nil {
			err, failed = fmt.Errorf("%w; %w", err, gerr), true
		}
	}
	if sub, _ := container.SubIDOwned(dir, os.Getuid()); sub != "" {
		podman := b.podman
		if podman == nil {
			podman = container.HostPodman
		}
		if perr := container.RemoveAsPodman(ctx, podman, dir); perr != nil {
			err, failed = fmt.Errorf("%w; %s is not yours (podman made it as one of your subordinate uids), and removing the home in podman's user namespace failed: %w (remove it with `podman unshare rm -rf %s`)", err, sub, perr, dir), true
		}
	}
	if failed {
		return err
	}
	return rmtree.RemoveAll(dir)
}

// giveBackRoot hands root's entries below dir back to the user through the engine.
func (b *Isolator) giveBackRoot(ctx context.Context, dir string) error {
	e, _, err := b.engine(ctx)
	if err != nil {
		return fmt.Errorf("files of root's, which the docker engine made: it does not answer: %w", err)
	}
	defer e.Close()
	if _, err := giveBack(ctx, e, b.Image, dir, os.Getuid(), os.Getgid()); err != nil {
		return fmt.Errorf("handing root's files in it back through the docker engine: %w (remove them as root)", err)
	}
	return nil
}
