//go:build integration

package integration

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"testing"
	"time"
)

// agedImage writes to dst (a `docker load` / `podman load` archive) the image of src, an
// archive `docker save` wrote of one image, named name, with labels added and made at
// created: what `docker commit` cannot set, and `sandboxes prune` looks at for an image
// no run's use is recorded of.
func agedImage(t *testing.T, src []byte, dst, name string, labels map[string]string, created time.Time) {
	t.Helper()
	type entry struct {
		h    *tar.Header
		data []byte
	}
	var es []entry
	files := map[string][]byte{}
	tr := tar.NewReader(bytes.NewReader(src))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("reading the saved image: %v", err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		es = append(es, entry{h, data})
		files[h.Name] = data
	}
	var manifest []map[string]any
	if err := json.Unmarshal(files["manifest.json"], &manifest); err != nil || len(manifest) != 1 {
		t.Fatalf("the saved image's manifest.json: %v (%d images)", err, len(manifest))
	}
	oldCfg, _ := manifest[0]["Config"].(string)
	var cfg map[string]any
	if err := json.Unmarshal(files[oldCfg], &cfg); err != nil {
		t.Fatalf("the saved image's config %s: %v", oldCfg, err)
	}
	cfg["created"] = created.UTC().Format(time.RFC3339Nano)
	inner, _ := cfg["config"].(map[string]any)
	if inner == nil {
		inner = map[string]any{}
		cfg["config"] = inner
	}
	l, _ := inner["Labels"].(map[string]any)
	if l == nil {
		l = map[string]any{}
	}
	for k, v := range labels {
		l[k] = v
	}
	inner["Labels"] = l
	cfgJSON, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(cfgJSON)
	newCfg := hex.EncodeToString(sum[:]) + ".json"
	manifest[0]["Config"] = newCfg
	manifest[0]["RepoTags"] = []string{name}
	manJSON, err := json.Marshal(manifest)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	tw := tar.NewWriter(&out)
	add := func(h *tar.Header, data []byte) {
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(data); err != nil {
			t.Fatal(err)
		}
	}
	for _, e := range es {
		switch e.h.Name {
		case oldCfg, "manifest.json", "repositories", "index.json":
			continue
		}
		add(e.h, e.data)
	}
	add(&tar.Header{Name: newCfg, Mode: 0o644, Size: int64(len(cfgJSON)), Typeflag: tar.TypeReg}, cfgJSON)
	add(&tar.Header{Name: "manifest.json", Mode: 0o644, Size: int64(len(manJSON)), Typeflag: tar.TypeReg}, manJSON)
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dst, it.uid, it.gid); err != nil {
		t.Fatal(err)
	}
}

// savedImage is `docker save` of img from the shared engine.
func savedImage(t *testing.T, img string) []byte {
	t.Helper()
	out, err := exec.Command("docker", "save", img).Output()
	if err != nil {
		t.Fatalf("docker save %s: %v", img, err)
	}
	return out
}
