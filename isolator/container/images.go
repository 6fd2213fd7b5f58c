package container

import (
	"fmt"
	"strings"
	"time"
)

// LabelImage marks devsandbox's default image: the Dockerfile of `devsandbox image
// build` (isolator/docker/Dockerfile) sets it to "default", and the build adds
// LabelVersion.
const LabelImage = "dev.devsandbox.image"

// DefaultRepo is the repository of the default image, DefaultRepo:<version> (the
// default of docker.image and krun.image).
const DefaultRepo = "devsandbox/default"

// Image is what prune looks at of an engine's image.
type Image struct {
	ID string
	// Names are its repo:tag names (podman writes localhost/devsandbox/default:TAG;
	// docker may list a dangling image as <none>:<none>).
	Names  []string
	Labels map[string]string
	// Created is when the image was made (zero: the engine does not say).
	Created time.Time
}

// StaleDefault says why img is the default image of another devsandbox build, which
// `sandboxes prune` may remove once no container uses it, or returns "" when it is
// not one. Labels alone do not decide: an image built FROM the default image inherits
// both of its labels. So it must carry LabelImage = "default" and a LabelVersion other
// than current, and have a name, every one of which is DefaultRepo:<that version>
// (with podman's localhost/ or docker.io/ before it): the name devsandbox gives it.
// An image of the user's own (named otherwise, or also named otherwise), and one with
// no name left, are kept.
func StaleDefault(img Image, current string) string {
	v := img.Labels[LabelVersion]
	if img.Labels[LabelImage] != "default" || v == "" || v == current || len(img.Names) == 0 {
		return ""
	}
	for _, n := range img.Names {
		n = strings.TrimPrefix(strings.TrimPrefix(n, "localhost/"), "docker.io/")
		if n != DefaultRepo+":"+v {
			return ""
		}
	}
	return fmt.Sprintf("the default image of devsandbox %s, this is %s", v, current)
}
