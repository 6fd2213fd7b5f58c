package docker

import (
	"archive/tar"
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/docker/docker/api/types/build"

	"github.com/devsandbox/devsandbox/internal/termsafe"
)

//go:embed Dockerfile
var dockerfile []byte

// BuildImage builds tag from the embedded Dockerfile on base, labelled with this build's
// version and the builder's uid, writing the build's progress to out. base must be on the engine or pullable by it.
func (b *Isolator) BuildImage(ctx context.Context, base, tag string, out io.Writer) error {
	e, a, err := b.engine(ctx)
	if err != nil {
		return err
	}
	defer e.Close()
	var ctxTar bytes.Buffer
	tw := tar.NewWriter(&ctxTar)
	if err := tw.WriteHeader(&tar.Header{Name: "Dockerfile", Mode: 0o644, Size: int64(len(dockerfile))}); err != nil {
		return err
	}
	if _, err := tw.Write(dockerfile); err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	resp, err := e.ImageBuild(ctx, &ctxTar, build.ImageBuildOptions{
		Tags:        []string{tag},
		Dockerfile:  "Dockerfile",
		BuildArgs:   map[string]*string{"BASE": &base},
		Remove:      true,
		ForceRemove: true,
		Version:     build.BuilderV1,
		// The builder's uid: another user's `sandboxes prune` keeps it (their runs'
		// uses of it are recorded in their own state, which it cannot see).
		Labels: map[string]string{LabelVersion: b.Version, LabelUser: strconv.Itoa(os.Getuid())},
	})
	if err != nil {
		st := engineDown(a, err)
		return fmt.Errorf("building %s: %s", tag, st.Reason)
	}
	defer resp.Body.Close()
	return buildProgress(resp.Body, out)
}

// buildProgress relays the engine's JSON build messages as text; an error message
// fails the build. The stream holds what the base image's programs print (a base is
// anyone's image) and names from it: it keeps its lines, and every other character a
// terminal acts on shows as its escape (termsafe.String); a status is one line.
func buildProgress(r io.Reader, out io.Writer) error {
	dec := json.NewDecoder(r)
	for {
		var m struct {
			Stream      string `json:"stream"`
			Status      string `json:"status"`
			Progress    string `json:"progress"`
			Error       string `json:"error"`
			ErrorDetail struct {
				Message string `json:"message"`
			} `json:"errorDetail"`
		}
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("reading the build output: %w", err)
		}
		switch {
		case m.Error != "":
			return fmt.Errorf("the image build failed: %s", strings.TrimSpace(m.Error))
		case m.Stream != "":
			fmt.Fprint(out, termsafe.String(m.Stream))
		case m.Status != "":
			fmt.Fprintf(out, "%s %s\n", termsafe.Line(m.Status), termsafe.Line(m.Progress))
		}
	}
}
