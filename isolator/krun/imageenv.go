package krun

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// The image's ENV, remembered by image ID. The spec must name the image's variables
// (imageEnv) before podman resolves the image for the create; asking podman for them
// is an image inspect, 2–10 ms a launch here. A run instead takes the ID and ENV the last
// run of the same image reference saw, and the create's own inspect (Runtime, made
// anyway for the runtime check) says which image podman used: an image ID is the
// digest of the image's config, ENV included, so the same ID is the same ENV. A
// different ID (the reference was retagged, or another podman storage holds another
// image under it) removes the container before it started, reads that image's ENV
// by its ID and creates it again: nothing of the image's ENV reaches the init either
// way, and a retag between the inspect and the create, which reading by reference
// before the create could not see, is caught too.
//
// The records are in the user's state directory, beside the image-use records and
// the derived-image cache: outside everything a sandbox can write. A record that
// cannot be read is a miss (one inspect, as without it); one that cannot be written
// costs the next run that inspect, never this run.

// imageEnvDir is the records' directory in devsandbox's state directory.
const imageEnvDir = "krun-image-env"

// imageEnvMax bounds a record's size (an image's ENV is a few kilobytes).
const imageEnvMax = 1 << 20

// imageEnvRecord is one image reference's last resolution.
type imageEnvRecord struct {
	Ref string   `json:"ref"`
	ID  string   `json:"id"`
	Env []string `json:"env"`
}

// imageEnvPath is the record of image reference ref in stateRoot.
func imageEnvPath(stateRoot, ref string) string {
	sum := sha256.Sum256([]byte(ref))
	return filepath.Join(stateRoot, imageEnvDir, hex.EncodeToString(sum[:16]))
}

// loadImageEnv returns the image ID and ENV recorded for ref; ok is false when there
// is no usable record.
func loadImageEnv(stateRoot, ref string) (id string, env []string, ok bool) {
	if stateRoot == "" {
		return "", nil, false
	}
	f, err := os.OpenFile(imageEnvPath(stateRoot, ref), os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return "", nil, false
	}
	defer f.Close()
	r, ok := readImageEnv(f)
	if !ok || r.Ref != ref {
		return "", nil, false
	}
	return r.ID, r.Env, true
}

// readImageEnv reads the record open on f: ok is false when f is not a regular file
// or holds no record with an image ID.
func readImageEnv(f *os.File) (r imageEnvRecord, ok bool) {
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return r, false
	}
	if err := json.NewDecoder(io.LimitReader(f, imageEnvMax)).Decode(&r); err != nil || imageIDOf(r.ID) == "" {
		return r, false
	}
	return r, true
}

// saveImageEnv records that ref named image id, whose ENV is env.
func saveImageEnv(stateRoot, ref, id string, env []string) error {
	if stateRoot == "" || imageIDOf(id) == "" {
		return nil
	}
	b, err := json.Marshal(imageEnvRecord{Ref: ref, ID: id, Env: env})
	if err != nil {
		return err
	}
	p := imageEnvPath(stateRoot, ref)
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return fmt.Errorf("recording the ENV of image %s: %w", ref, err)
	}
	// A new file renamed over the record: a reader sees the old one or the new one,
	// and a link planted at the record is replaced, not followed.
	f, err := os.CreateTemp(filepath.Dir(p), ".tmp-")
	if err != nil {
		return fmt.Errorf("recording the ENV of image %s: %w", ref, err)
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), p)
	}
	if err != nil {
		_ = os.Remove(f.Name())
		return fmt.Errorf("recording the ENV of image %s: %w", ref, err)
	}
	return nil
}

// imageIDOf is id without "sha256:", or "" when it is not a run of hex digits.
func imageIDOf(id string) string {
	id = strings.TrimPrefix(id, "sha256:")
	if id == "" {
		return ""
	}
	for _, c := range id {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return ""
		}
	}
	return id
}

// sameImage says whether podman's two image IDs name the same image.
func sameImage(a, b string) bool {
	a, b = imageIDOf(a), imageIDOf(b)
	return a != "" && a == b
}

var errImageMoving = errors.New("the image changed under the run")
