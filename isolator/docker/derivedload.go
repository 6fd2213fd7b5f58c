package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"strings"
	"time"

	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"
	dockerspec "github.com/moby/docker-image-spec/specs-go/v1"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/devsandbox/devsandbox/isolator/container"
)

// derivation is a derived image as this build makes it, named by its content before
// the engine is asked for anything.
//
// The image is the base's layers and one more, layer: what devsandbox ships
// (shipTar), byte for byte. Its config is the base's with the init as entrypoint, no
// command, and devsandbox's labels, written here; so the image's ID, the digest of
// that config, which names the digest of every layer's content, is known here (id).
// The engine is given the image as `docker load` takes it (archive): the config, the
// manifest and the one layer; the base's layers it has already, under their chain
// IDs, and does not get again. An image of ID id on an engine is this image: the
// engine names images and layers by the digests of what they hold, so no one with
// access to the engine can make another image of that ID, whatever labels they copy.
type derivation struct {
	id     string // "sha256:" and the config's digest
	layer  []byte // the added layer (shipTar)
	labels map[string]string
	// config and manifest are the image's config and the manifest naming it and
	// its layers' files, as the archive holds them.
	config, manifest []byte
	// volumes are the base's VOLUMEs (a commit leaves out what they hold).
	volumes []string
}

// derive computes the derivation of the base image bi (named base) for this
// devsandbox build, the user uid, the programs pr and the layout's files. When bi's
// file system is not layers, it returns errNoDerivation with d's layer and labels
// and no ID.
func derive(bi image.InspectResponse, base, version string, uid int, pr programs, files []container.ImageFile) (derivation, error) {
	layer, err := shipTar(pr, files)
	if err != nil {
		return derivation{}, err
	}
	sum := sha256.Sum256(layer)
	d := derivation{layer: layer, labels: map[string]string{LabelBase: bi.ID, LabelBaseRef: base, LabelContent: hex.EncodeToString(sum[:16]),
		LabelVersion: version, LabelUser: fmt.Sprint(uid)}}
	var cfg dockerspec.DockerOCIImageConfig
	if bi.Config != nil {
		cfg = *bi.Config
	}
	// As a container created with an entrypoint and no command and committed makes it:
	// the base's settings (env, user, workdir…), the base's labels and ours over them.
	cfg.Entrypoint, cfg.Cmd = []string{container.InitPath}, nil
	labels := maps.Clone(cfg.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	maps.Copy(labels, d.labels)
	cfg.Labels = labels
	var diffs []digest.Digest
	if bi.RootFS.Type != "layers" {
		return d, fmt.Errorf("%w: the image %s has a root file system of type %q, not layers", errNoDerivation, base, bi.RootFS.Type)
	}
	for _, l := range bi.RootFS.Layers {
		diffs = append(diffs, digest.Digest(l))
	}
	diffs = append(diffs, digest.NewDigestFromEncoded(digest.SHA256, hex.EncodeToString(sum[:])))
	img := dockerspec.DockerOCIImage{Image: ocispec.Image{
		Platform: ocispec.Platform{Architecture: bi.Architecture, OS: bi.Os, Variant: bi.Variant},
		RootFS:   ocispec.RootFS{Type: "layers", DiffIDs: diffs},
	}, Config: cfg}
	// Made when its base was (a time the engine gives the same each run; prune counts
	// an image's age from it when no use of it is recorded).
	if t, err := time.Parse(time.RFC3339Nano, bi.Created); err == nil && t.Unix() > 0 {
		img.Created = &t
	}
	config, err := json.Marshal(img)
	if err != nil {
		return derivation{}, err
	}
	cd := digest.FromBytes(config)
	d.id = cd.String()
	// The manifest names a file for each base layer too: the engine finds those
	// layers by their chain IDs and opens no file for them.
	manifest := []struct {
		Config   string
		RepoTags []string
		Layers   []string
	}{{Config: cd.Encoded() + ".json"}}
	for i := range bi.RootFS.Layers {
		manifest[0].Layers = append(manifest[0].Layers, fmt.Sprintf("base%d.tar", i))
	}
	manifest[0].Layers = append(manifest[0].Layers, "layer.tar")
	mb, err := json.Marshal(manifest)
	if err != nil {
		return derivation{}, err
	}
	d.config, d.manifest = config, mb
	return d, nil
}

// loadTag is the name a derived image of config digest hex is given once it is
// loaded: a name does not change an image's ID, and an engine records when it named
// an image (Metadata.LastTagTime), which is when the image was loaded; `sandboxes prune`
// counts a loaded image's age from it when no use of it is recorded (its Created is
// its base's). Nothing finds the image by this name: anyone with access to the
// engine can move it.
func loadTag(hex string) string {
	return "devsandbox-derived:" + hex[:min(12, len(hex))]
}

// archive is d as `docker load` takes it (made only when the image is loaded).
func (d derivation) archive() ([]byte, error) {
	var buf bytes.Buffer
	buf.Grow(len(d.layer) + len(d.config) + len(d.manifest) + 8<<10)
	tw := tar.NewWriter(&buf)
	for _, f := range []struct {
		name string
		data []byte
	}{{strings.TrimPrefix(d.id, "sha256:") + ".json", d.config}, {"layer.tar", d.layer}, {"manifest.json", d.manifest}} {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: f.name, Mode: 0o644, Size: int64(len(f.data))}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// errNoDerivation: the image cannot be made by a load (it is made by a commit).
var errNoDerivation = errors.New("not derivable by a load")

// hasImage reports whether the engine has the image of ID id (by that ID: the
// digest of its content, never a name or a label).
func hasImage(ctx context.Context, e Engine, id string) bool {
	in, err := e.ImageInspect(ctx, id)
	return err == nil && in.ID == id
}

// loadDerived gives the engine d's archive and reports whether it then has the image
// d.id. An engine that does not take the archive (one whose images are in
// containerd's store may want the base's layers too) or makes another ID of it
// returns an error saying so.
func loadDerived(ctx context.Context, e Engine, d derivation) error {
	a, err := d.archive()
	if err != nil {
		return err
	}
	r, err := e.ImageLoad(ctx, bytes.NewReader(a), client.ImageLoadWithQuiet(true))
	if err != nil {
		return err
	}
	defer r.Body.Close()
	dec := json.NewDecoder(r.Body)
	for {
		var m struct {
			Error string `json:"error"`
		}
		if err := dec.Decode(&m); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return fmt.Errorf("reading the engine's answer: %w", err)
		}
		if m.Error != "" {
			return errors.New(m.Error)
		}
	}
	if !hasImage(ctx, e, d.id) {
		return fmt.Errorf("the engine loaded the image but has no image %s", shortID(d.id))
	}
	// Named after the load (a load's own names leave the time unrecorded), so that
	// prune counts its age from now; a run whose engine refuses the name still runs
	// (prune then counts from the base's time).
	_ = e.ImageTag(ctx, d.id, loadTag(strings.TrimPrefix(d.id, "sha256:")))
	return nil
}
