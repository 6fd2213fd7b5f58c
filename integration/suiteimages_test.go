//go:build integration

package integration

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
)

// The suite's runs make images in every docker engine they use: the default image
// (setupEngine's `image build`, devsandbox/default:VERSION) and the images runs derive
// from it (one per content: docker.home, the user, the files tools generate), 15 to
// 20 per engine after a full run. They are not the test user's to prune (the suite's
// state, their use records, go with the throwaway home), so the suite removes them at
// its end: the images it made, and only those. An image counts as the suite's when
// the engine did not have it when the suite started (suiteImages.before), this
// build's version labels it (dev.devsandbox.version), and it is a derived image
// (dev.devsandbox.base) or a default image named devsandbox/default:VERSION alone;
// never devsandbox-test/* or any other image. Suites of other checkouts may run at
// the same time against the same engines: each holds suiteImagesLock shared for its
// whole life, and one that finds another still holding it at its end removes nothing
// (a suite of the same version may be using those images) and says what it left.
// The default image setupPodman loads into the test user's podman storage for krun
// (localhost/devsandbox/default:VERSION) is removed by the same rule.

// suiteImagesLock is held shared by every running suite (of this code or later).
const suiteImagesLock = "/var/tmp/devsandbox-it-images.lock"

// suiteImages is what the suite found in the engines when it started.
type suiteImages struct {
	lock   *os.File
	before map[string]map[string]bool // by engine address: the IDs of the images there
	// podmanBefore are the IDs of the images in the test user's podman storage
	// before setupPodman loaded the default image there (nil: not listed).
	podmanBefore map[string]bool
}

var suiteStart suiteImages

// suiteEngines are the addresses of the docker engines the suite's variants use.
func suiteEngines() []string {
	var out []string
	for _, iso := range []string{localDocker, remoteDocker, rootlessDocker} {
		if a := engineOf(iso); !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	return out
}

// engineImageIDs lists the IDs of every image (intermediate ones too) in the engine
// at addr, as root's docker CLI sees them.
func engineImageIDs(addr string) (map[string]bool, error) {
	cmd := exec.Command("docker", "image", "ls", "-aq", "--no-trunc")
	cmd.Env = append(os.Environ(), "DOCKER_HOST="+addr)
	out, err := cmd.Output()
	if err != nil {
		return nil, err
	}
	ids := map[string]bool{}
	for _, id := range strings.Fields(string(out)) {
		ids[id] = true
	}
	return ids, nil
}

// recordSuiteImages takes suiteImagesLock shared and lists the images each engine has
// before the suite makes any; an engine that does not answer is not cleaned at the end.
func recordSuiteImages() {
	suiteStart.before = map[string]map[string]bool{}
	if f, err := os.OpenFile(suiteImagesLock, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o600); err == nil {
		if syscall.Flock(int(f.Fd()), syscall.LOCK_SH) == nil {
			suiteStart.lock = f
		} else {
			f.Close()
		}
	}
	for _, a := range suiteEngines() {
		if ids, err := engineImageIDs(a); err == nil {
			suiteStart.before[a] = ids
		}
	}
}

// suiteImage is an image the engine has, as removeSuiteImages judges it.
type suiteImage struct {
	ID       string
	RepoTags []string
	Config   struct{ Labels map[string]string }
}

// removeSuiteImages removes, from each engine recordSuiteImages listed, the images
// the suite made (see above), derived ones first (a committed one is a child of its
// base), and says on stderr what it removed and what it left. An image a container
// still uses is left (the engine refuses), and named.
func removeSuiteImages() {
	if suiteStart.before == nil || it.bin == "" {
		return
	}
	defer func() {
		if suiteStart.lock != nil {
			suiteStart.lock.Close()
		}
		suiteStart = suiteImages{}
	}()
	out, err := exec.Command(it.bin, "version").Output()
	if err != nil {
		fmt.Fprintf(os.Stderr, "integration: the images the suite made are left: devsandbox version: %v\n", err)
		return
	}
	version := strings.TrimPrefix(strings.TrimSpace(string(out)), "devsandbox ")
	others := suiteStart.lock == nil || syscall.Flock(int(suiteStart.lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil
	removePodmanImages(version, others)
	for _, a := range suiteEngines() {
		before, ok := suiteStart.before[a]
		if !ok {
			continue
		}
		made := suiteMadeImages(a, before, version)
		if len(made) == 0 {
			continue
		}
		if others {
			fmt.Fprintf(os.Stderr, "integration: left %d images the suite made in %s: another suite holds %s (one of the same version may use them)\n", len(made), a, suiteImagesLock)
			continue
		}
		var removed int
		for _, im := range made {
			refs := im.RepoTags
			if len(refs) == 0 {
				refs = []string{im.ID}
			}
			cmd := exec.Command("docker", append([]string{"image", "rm"}, refs...)...)
			cmd.Env = append(os.Environ(), "DOCKER_HOST="+a)
			if out, err := cmd.CombinedOutput(); err != nil {
				fmt.Fprintf(os.Stderr, "integration: left image %s (%s) in %s: %v: %s\n", im.ID, strings.Join(im.RepoTags, " "), a, err, bytes.TrimSpace(out))
				continue
			}
			removed++
		}
		fmt.Fprintf(os.Stderr, "integration: removed %d of the %d images the suite made in %s\n", removed, len(made), a)
	}
}

// suiteMadeImages are the images of the engine at addr that the suite made: not in
// before, of this version, derived or default; derived ones first.
func suiteMadeImages(addr string, before map[string]bool, version string) []suiteImage {
	now, err := engineImageIDs(addr)
	if err != nil {
		fmt.Fprintf(os.Stderr, "integration: the images the suite made in %s are left: listing them: %v\n", addr, err)
		return nil
	}
	var ids []string
	for id := range now {
		if !before[id] {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	cmd := exec.Command("docker", append([]string{"image", "inspect"}, ids...)...)
	cmd.Env = append(os.Environ(), "DOCKER_HOST="+addr)
	out, err := cmd.Output()
	var all []suiteImage
	if err == nil {
		err = json.Unmarshal(out, &all)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "integration: the images the suite made in %s are left: inspecting them: %v\n", addr, err)
		return nil
	}
	var derived, defaults []suiteImage
	for _, im := range all {
		l := im.Config.Labels
		switch {
		case l["dev.devsandbox.version"] != version:
		case l["dev.devsandbox.base"] != "":
			derived = append(derived, im)
		case defaultImageOnly(im, version, "devsandbox/default:"+version):
			defaults = append(defaults, im)
		}
	}
	return append(derived, defaults...)
}

// defaultImageOnly reports whether im is the default image of version and has no
// name but ref.
func defaultImageOnly(im suiteImage, version, ref string) bool {
	l := im.Config.Labels
	return l["dev.devsandbox.version"] == version && l["dev.devsandbox.image"] == "default" &&
		len(im.RepoTags) > 0 && !slices.ContainsFunc(im.RepoTags, func(t string) bool { return t != ref })
}

// podmanImageIDs lists the IDs of every image in the test user's podman storage
// (podmanAs: the storage the throwaway home's storage.conf names).
func podmanImageIDs() (map[string]bool, error) {
	out, err := podmanAs("image", "ls", "-aq", "--no-trunc")
	if err != nil {
		return nil, fmt.Errorf("%w: %s", err, out)
	}
	ids := map[string]bool{}
	for _, id := range strings.Fields(out) {
		if strings.HasPrefix(id, "sha256:") {
			ids[id] = true
		}
	}
	return ids, nil
}

// recordPodmanImages lists the test user's podman images before setupPodman loads
// the default image (for krun runs) there: the suite removes it at its end unless
// it was there before (removePodmanImages).
func recordPodmanImages() {
	if ids, err := podmanImageIDs(); err == nil {
		suiteStart.podmanBefore = ids
	}
}

// removePodmanImages removes from the test user's podman storage the default image
// the suite loaded (localhost/devsandbox/default:VERSION, not there when the suite
// started, no other name; krun derives no image), unless another suite holds
// suiteImagesLock (others), and says on stderr what it removed or left.
func removePodmanImages(version string, others bool) {
	before := suiteStart.podmanBefore
	if before == nil {
		return
	}
	now, err := podmanImageIDs()
	if err != nil {
		fmt.Fprintf(os.Stderr, "integration: the images the suite loaded in the test user's podman storage are left: listing them: %v\n", err)
		return
	}
	var ids []string
	for id := range now {
		if !before[id] {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return
	}
	out, err := podmanAs(append([]string{"image", "inspect"}, ids...)...)
	var all []suiteImage
	if err == nil {
		// podman may print warnings before the JSON.
		err = json.Unmarshal([]byte(out[max(strings.Index(out, "["), 0):]), &all)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "integration: the images the suite loaded in the test user's podman storage are left: inspecting them: %v\n", err)
		return
	}
	var made []suiteImage
	for _, im := range all {
		if defaultImageOnly(im, version, "localhost/devsandbox/default:"+version) {
			made = append(made, im)
		}
	}
	if len(made) == 0 {
		return
	}
	if others {
		fmt.Fprintf(os.Stderr, "integration: left %d images the suite loaded in the test user's podman storage: another suite holds %s (one of the same version may use them)\n", len(made), suiteImagesLock)
		return
	}
	var removed int
	for _, im := range made {
		if out, err := podmanAs(append([]string{"rmi"}, im.RepoTags...)...); err != nil {
			fmt.Fprintf(os.Stderr, "integration: left image %s (%s) in the test user's podman storage: %v: %s\n", im.ID, strings.Join(im.RepoTags, " "), err, out)
			continue
		}
		removed++
	}
	fmt.Fprintf(os.Stderr, "integration: removed %d of the %d images the suite loaded in the test user's podman storage\n", removed, len(made))
}
