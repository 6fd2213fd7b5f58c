package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	dockercontainer "github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/image"

	"github.com/devsandbox/devsandbox/internal/termsafe"
	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/isolator/container"
	"github.com/devsandbox/devsandbox/isolator/imageuse"
)

// Labels of an image devsandbox derives from the user's (docker.image): the base
// image's ID and name, and a hash of what devsandbox added; LabelVersion and
// LabelUser as on its containers.
const (
	LabelBase    = "dev.devsandbox.base"
	LabelBaseRef = "dev.devsandbox.base-ref"
	LabelContent = "dev.devsandbox.content"
)

// derivedCacheFile, in devsandbox's state directory, maps an engine's address, a base
// image's ID and what a run ships to the derived image's ID on that engine.
const derivedCacheFile = "docker-images.json"

// derivedImage returns the ID of the image p's containers run: base (docker.image)
// with the programs pr and the layout's files added in the engine, root's, on what
// becomes the container's read-only root. Nothing is copied per run: the image is
// made once per engine, base image, devsandbox build and content, and cached. A
// cached ID is used only when the engine still has an image of that ID with the
// labels it was made with: an ID, unlike a tag, names content no one can change (it
// is the digest of the image's config, which names its layers' digests), so an image
// of that ID on any engine is the one made. The engine's address only keeps engines'
// entries apart; it is not trusted to identify one: on a miss, the IDs cached for the
// same content under other addresses are tried the same way. Then the image this
// build makes, whose ID is computed here from its content (derivation), is used when
// the engine has it, whoever made it; only then is it made. An image found by its
// labels never is: anyone who can reach the engine can copy them. proven, when set,
// reports whether the engine is known to have the image of an ID (a running
// container was made from it: see Run): this address's cached ID, so shown, is used
// without asking again, since its content, labels included, is what the ID names,
// and it was cached for this base image and content only once it was made or
// checked. The use of both images, the derived one and its base, is recorded in the
// user's state (package imageuse): `sandboxes prune` keeps what runs used within its
// --days. baseEnv is the base image's ENV, the derived image's too.
func (b *Isolator) derivedImage(ctx context.Context, e Engine, addr Address, p *isolator.Plan, base string, pr programs, files []container.ImageFile, proven func(id string) bool) (derived string, baseEnv []string, err error) {
	bi, err := e.ImageInspect(ctx, base)
	if err != nil && !cerrdefs.IsNotFound(err) {
		st := engineDown(addr, err)
		return "", nil, fmt.Errorf("%w: %s; %s", isolator.ErrUnavailable, st.Reason, st.Fix)
	}
	if err != nil {
		return "", nil, fmt.Errorf("%w: the image %s is not on the docker engine at %s (%v); build it with `devsandbox image build` (or pull it, or set docker.image / --image)", isolator.ErrUnavailable, base, addr.Host, err)
	}
	if bi.Config != nil {
		// The derived image's ENV is its base's (derive, and a commit keeps it).
		baseEnv = bi.Config.Env
	}
	key, err := derivedKey(b.Version, p.User.UID, pr, files)
	if err != nil {
		return "", nil, err
	}
	stateRoot := filepath.Dir(p.StateDir)
	defer func() {
		if err == nil {
			now := time.Now()
			// A record that cannot be written costs the image its protection from
			// prune, never the run: prune still keeps an image a container uses.
			_ = imageuse.Record(stateRoot, imageuse.Docker, derived, now)
			_ = imageuse.Record(stateRoot, imageuse.Docker, bi.ID, now)
		}
	}()
	what := " " + bi.ID + " " + key
	cacheKey := addr.Host + what
	cache := filepath.Join(stateRoot, derivedCacheFile)
	m := b.head.derivedCache(cache)
	if m == nil {
		m = readRecords(cache)
	}
	if id := m[cacheKey]; id != "" && proven != nil && proven(id) {
		b.imageWay = "cached"
		return id, baseEnv, nil
	}
	tried := map[string]bool{"": true}
	if id := b.cachedDerived(ctx, e, m, cache, cacheKey, what, bi.ID, tried); id != "" {
		b.imageWay = "cached"
		return id, baseEnv, nil
	}
	// Not cached (a new state directory: a CI runner's fresh home, another user, a
	// reinstall): the image this build would make, named by its content, is used when
	// the engine has it. Its labels are never looked up: anyone with access to the
	// engine can copy them onto another image (see derivation).
	d, err := derive(bi, base, b.Version, p.User.UID, pr, files)
	if err != nil && !errors.Is(err, errNoDerivation) {
		return "", nil, err
	}
	if bi.Config != nil {
		d.volumes = slices.Sorted(maps.Keys(bi.Config.Volumes))
	}
	if d.id != "" && hasImage(ctx, e, d.id) {
		b.imageWay = "found by content"
		writeRecord(cache, cacheKey, d.id)
		return d.id, baseEnv, nil
	}
	// None: made under a lock, so that runs starting together (a harness's parallel
	// jobs) make one image and all use it. Equal images of different IDs would give
	// their runs different specs, and runs keeping a container would refuse each
	// other's. Who waited finds the image made meanwhile in the cache.
	unlock, err := lockFile(cache + ".lock-build")
	if err != nil {
		return "", nil, fmt.Errorf("%w: preparing the image %s for the sandbox: %w", isolator.ErrUnavailable, base, err)
	}
	defer unlock()
	if id := b.cachedDerived(ctx, e, readRecords(cache), cache, cacheKey, what, bi.ID, tried); id != "" {
		b.imageWay = "cached"
		return id, baseEnv, nil
	}
	// Runs with other state directories (a harness's jobs, each with its own home)
	// hold other locks: one of them may have loaded it meanwhile.
	if d.id != "" && hasImage(ctx, e, d.id) {
		b.imageWay = "found by content"
		writeRecord(cache, cacheKey, d.id)
		return d.id, baseEnv, nil
	}
	id, err := b.buildDerived(ctx, e, base, pr, files, d)
	if err != nil {
		return "", nil, err
	}
	writeRecord(cache, cacheKey, id)
	return id, baseEnv, nil
}

// cachedDerived returns the derived image m, the cache at path cache, names for
// cacheKey (this address, the base image baseID and the content what) when the engine
// has it, else the first the other addresses' entries for what name that it has; ""
// when it has none of them. An image the engine has is recorded under cacheKey. IDs
// in tried are not asked about again, and those asked about are added.
func (b *Isolator) cachedDerived(ctx context.Context, e Engine, m map[string]string, cache, cacheKey, what, baseID string, tried map[string]bool) string {
	// This address's entry first, then other addresses' for the same content (one
	// engine reached by two addresses, a socket's two paths): each only once the
	// engine shows it has that image.
	cands := []string{m[cacheKey]}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if k != cacheKey && strings.HasSuffix(k, what) {
			cands = append(cands, m[k])
		}
	}
	for _, id := range cands {
		if tried[id] {
			continue
		}
		tried[id] = true
		in, err := e.ImageInspect(ctx, id)
		if err == nil && in.ID == id && in.Config != nil && in.Config.Labels[LabelBase] == baseID && in.Config.Labels[LabelVersion] == b.Version {
			if id != m[cacheKey] {
				writeRecord(cache, cacheKey, id)
			}
			return id
		}
	}
	return ""
}

// derivedKey identifies what a derived image adds: the devsandbox build, the user,
// the programs (by their files' identity, not read) and the generated files.
func derivedKey(version string, uid int, pr programs, files []container.ImageFile) (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%d\x00%s\x00", version, uid, pr.arch)
	for _, g := range []program{pr.init, pr.proxy} {
		id, err := g.id()
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s\x00", id)
	}
	for _, f := range files {
		fmt.Fprintf(h, "%s\x00%d\x00", f.Path, len(f.Content))
		h.Write(f.Content)
	}
	return hex.EncodeToString(h.Sum(nil)[:16]), nil
}

// buildDerived makes the derived image d (d.id "": the base cannot be given a
// layer by a load) and returns its ID: loaded (see derivation), or, when the engine
// does not take the archive, made as a container of base, never started, with the
// files copied in through the Engine API, committed; such an image's ID is the
// engine's own, and a run with another state directory makes it again. The caller
// holds the build lock (derivedImage).
func (b *Isolator) buildDerived(ctx context.Context, e Engine, base string, pr programs, files []container.ImageFile, d derivation) (string, error) {
	failed := func(format string, args ...any) error {
		return fmt.Errorf("%w: preparing the image %s for the sandbox: %s; the command did not run", isolator.ErrUnavailable, base, fmt.Sprintf(format, args...))
	}
	fmt.Fprintf(b.progress(), "devsandbox: preparing the image %s for sandboxes (once per image and devsandbox version)\n", termsafe.Line(base))
	var loadErr error
	b.imageWay = "committed"
	if d.id != "" {
		if loadErr = loadDerived(ctx, e, d); loadErr == nil {
			b.imageWay = "loaded"
			return d.id, nil
		}
		// --debug says so: an engine that never takes the load (one whose images are
		// in containerd's store) reuses no image across state directories.
		b.imageWay = "committed, load refused"
	}
	if d.layer == nil {
		var err error
		if d.layer, err = shipTar(pr, files); err != nil {
			return "", err
		}
	}
	// A commit takes the container's file system without its volumes: what devsandbox
	// copies below one of the base's VOLUMEs would not be in the image, and the base's
	// own files there (an init, a proxy of its own) would run in their place.
	if v, f := hiddenBy(d.volumes, shipPaths(pr, files)); v != "" {
		return "", failed("it declares VOLUME %s, over %s, which devsandbox adds to it, and the engine did not take the image as a load: a commit would leave devsandbox's file out and keep the image's own at its path; use an image without that VOLUME%s", termsafe.Line(v), f, loadTried(loadErr))
	}
	// The derived image's entrypoint is the init (every container devsandbox makes
	// names its own); without one, an image with no command cannot be created from.
	// Never started, so it needs no network (spec.go).
	cfg := &dockercontainer.Config{Image: d.labels[LabelBase], Entrypoint: []string{container.InitPath}, Labels: ownLabels(maps.Clone(d.labels)), Healthcheck: noHealthcheck(), NetworkDisabled: true}
	created, err := e.ContainerCreate(ctx, cfg, &dockercontainer.HostConfig{NetworkMode: "none"}, nil, nil, "")
	if err != nil {
		return "", failed("the engine refused a container of it: %v%s", err, loadTried(loadErr))
	}
	defer func() {
		_ = e.ContainerRemove(context.WithoutCancel(ctx), created.ID, dockercontainer.RemoveOptions{Force: true, RemoveVolumes: true})
	}()
	if err := e.CopyToContainer(ctx, created.ID, "/", bytes.NewReader(d.layer), dockercontainer.CopyToContainerOptions{}); err != nil {
		return "", failed("copying devsandbox's files in: %v%s", err, loadTried(loadErr))
	}
	r, err := e.ContainerCommit(ctx, created.ID, dockercontainer.CommitOptions{Comment: "devsandbox " + b.Version + ": " + base + " with devsandbox-init"})
	if err != nil {
		return "", failed("committing it: %v%s", err, loadTried(loadErr))
	}
	return r.ID, nil
}

// loadTried says why the image was not loaded, after why it was not committed either.
func loadTried(err error) string {
	if err == nil {
		return ""
	}
	return fmt.Sprintf(" (loading it first: %v)", err)
}

// progress is where a build says it happens (Progress; nil: nowhere).
func (b *Isolator) progress() io.Writer {
	if b.Progress != nil {
		return b.Progress
	}
	return io.Discard
}

// shipTar is the archive of what a derived image adds: container.ShipDir with the
// programs, the layout's files and /tmp (1777); root's, read-only, in a stable order.
func shipTar(pr programs, files []container.ImageFile) ([]byte, error) {
	type entry struct {
		name string
		mode int64
		data []byte
	}
	var es []entry
	for _, g := range []struct {
		name string
		p    program
	}{{initName, pr.init}, {proxyName, pr.proxy}} {
		if g.p.none() {
			continue
		}
		data, err := g.p.read()
		if err != nil {
			return nil, err
		}
		es = append(es, entry{strings.TrimPrefix(container.ShipDir, "/") + "/" + g.name, 0o555, data})
	}
	for _, f := range files {
		es = append(es, entry{strings.TrimPrefix(f.Path, "/"), 0o444, f.Content})
	}
	sort.Slice(es, func(i, j int) bool { return es[i].name < es[j].name })
	var buf bytes.Buffer
	size := 0
	for _, e := range es {
		size += len(e.data) + 2<<10 // the data, its headers and padding
	}
	buf.Grow(size + 16<<10)
	tw := tar.NewWriter(&buf)
	dirs := map[string]bool{}
	for _, e := range es {
		// Directories devsandbox makes are root's, 0755; existing ones keep theirs.
		for d := filepath.Dir(e.name); d != "." && !dirs[d]; d = filepath.Dir(d) {
			dirs[d] = true
		}
	}
	ds := make([]string, 0, len(dirs))
	for d := range dirs {
		ds = append(ds, d)
	}
	sort.Strings(ds)
	for _, d := range ds {
		if d == "etc" || d == "run" {
			continue // the image's own
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d + "/", Mode: 0o755, Format: tar.FormatPAX}); err != nil {
			return nil, err
		}
	}
	// /tmp, 1777 whatever the image's: the runtime gives the tmpfs mounted there
	// (mode=1777) the mode of the directory it covers, and an image's 0755 /tmp left
	// the sandbox a /tmp its user could not write. The engine has no option against
	// that (20.10 refuses notmpcopyup; tmpfs-mode is overridden the same way).
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: "tmp/", Mode: 0o1777, Format: tar.FormatPAX}); err != nil {
		return nil, err
	}
	for _, e := range es {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: e.name, Mode: e.mode, Size: int64(len(e.data)), Format: tar.FormatPAX}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(e.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// PruneImages removes the images no run of this user is likely to use again and that
// no container uses, or with dryRun only says so: first the user's derived images
// (uid's), then the default images of other devsandbox builds (container.StaleDefault:
// named and labelled by `devsandbox image build`, never an image of the user's own),
// whose derived images went first. A derived image whose base name no longer names its
// base goes at once: no run reaches it by that name again, and one that reaches the old
// base by another name makes its image anew (seconds; it never fails for it). The others,
// a derived image of any build and content and another build's default image, go only
// when no run of the user used them within maxAge (--days; the records in stateRoot,
// package imageuse), or, with no use recorded, when they were made before it
// (imageuse.Decide). Another build's default image labelled as built by another uid
// stays: that user's runs record their uses in their own state, which prune cannot see.
// The image docker.image names stays, whatever build's it is. It returns one line per
// image, what was (or would be) done and why.
func (b *Isolator) PruneImages(ctx context.Context, uid int, stateRoot string, maxAge time.Duration, dryRun bool) ([]string, error) {
	e, a, err := b.engine(ctx)
	if err != nil {
		return nil, err
	}
	defer e.Close()
	// The engine is asked for its images and containers once, whatever it holds (an
	// engine keeps every version's derived images, hundreds: one listing of them takes
	// it a good part of a second), and the images are picked from that list by their
	// labels here; prune listed images twice and asked three questions per image before.
	all, err := e.ImageList(ctx, image.ListOptions{All: true})
	if err != nil {
		st := engineDown(a, err)
		return nil, fmt.Errorf("listing the images: %s; %s", st.Reason, st.Fix)
	}
	users, err := imageUsers(ctx, e, all)
	if err != nil {
		return nil, err
	}
	var imgs, defaults []image.Summary
	for _, im := range all {
		if _, derived := im.Labels[LabelBase]; derived && im.Labels[LabelUser] == fmt.Sprint(uid) {
			imgs = append(imgs, im)
		}
		if im.Labels[container.LabelImage] == "default" {
			defaults = append(defaults, im)
		}
	}
	now := time.Now()
	var out []string
	var errs []error
	gone := map[string]bool{} // removed (or, with dryRun, would be)
	prune := func(im image.Summary, name, why string, aged bool) {
		decide := func() (bool, string) { return false, why }
		if aged {
			decide = func() (bool, string) {
				last := imageuse.Last(stateRoot, imageuse.Docker, im.ID)
				made := created(im.Created)
				if last.IsZero() && now.Sub(made) > maxAge { // only then can madeAt keep it
					made = madeAt(ctx, e, im)
				}
				return imageuse.Decide(why, last, made, now, maxAge)
			}
		}
		line, removed, err := removeImage(ctx, e, im.ID, name, why, users[im.ID], decide, dryRun)
		out, errs = append(out, line), append(errs, err)
		if removed {
			gone[im.ID] = true
			if !dryRun {
				imageuse.Forget(stateRoot, imageuse.Docker, im.ID)
			}
		}
	}
	bases := map[string]baseAnswer{} // by name: many derived images share a base, asked about once
	for _, im := range imgs {
		why, dead := b.staleImage(ctx, e, im.Labels, bases)
		prune(im, im.Labels[LabelBaseRef], why, !dead)
	}
	for _, im := range defaults {
		if gone[im.ID] {
			continue
		}
		why := container.StaleDefault(container.Image{ID: im.ID, Names: im.RepoTags, Labels: im.Labels}, b.Version)
		switch {
		case why == "" || slices.Contains(im.RepoTags, b.Image):
			// An older build's image that docker.image names on purpose stays.
		case im.Labels[LabelUser] != "" && im.Labels[LabelUser] != fmt.Sprint(uid):
			out = append(out, fmt.Sprintf("kept image %s (%s): %s, but user %s built it, whose runs this prune cannot see", shortID(im.ID), im.RepoTags[0], why, im.Labels[LabelUser]))
		default:
			prune(im, im.RepoTags[0], why, true)
		}
	}
	// Then the derived-image cache's entries no run will use: those of the images just
	// removed go too.
	lines, err := b.pruneDerivedCache(ctx, e, a.Host, all, users, stateRoot, gone, now, maxAge, dryRun)
	out, errs = append(out, lines...), append(errs, err)
	return nonEmpty(out), errors.Join(errs...)
}

// madeAt is when the engine got the image im, as prune counts its age when no use of
// it is recorded: the later of its Created and the engine's own record of when it was
// last named (Metadata.LastTagTime). A loaded derived image says it was made when its
// base was (derivation), but it is loaded with a name of its own (loadTag), so the
// engine records the load's time; an engine whose images are in containerd's store
// records when each image was made or last named, tagged or not.
//
// Only a named image is asked about (an inspect each: an engine holds hundreds of
// images): the engine records that time when it names an image, and a derived image
// is loaded with its name; one never named was made when its Created says.
func madeAt(ctx context.Context, e Engine, im image.Summary) time.Time {
	t := created(im.Created)
	if len(im.RepoTags) == 0 {
		return t
	}
	if in, err := e.ImageInspect(ctx, im.ID); err == nil && in.ID == im.ID && in.Metadata.LastTagTime.After(t) {
		t = in.Metadata.LastTagTime
	}
	return t
}

// created is the time of an image's Created (Unix seconds; zero: unknown).
func created(sec int64) time.Time {
	if sec <= 0 {
		return time.Time{}
	}
	return time.Unix(sec, 0)
}

// shortID is an image ID as people read it: 12 hex digits, no "sha256:".
func shortID(id string) string {
	short := strings.TrimPrefix(id, "sha256:")
	return short[:min(12, len(short))]
}

// imageUsers counts, by image ID, the engine's containers (any state) made from each
// image or from an image built on it (the engine's "ancestor" filter, through the
// parent links of all, the engine's images): one listing, whatever the number of
// images.
func imageUsers(ctx context.Context, e Engine, all []image.Summary) (map[string]int, error) {
	cs, err := e.ContainerList(ctx, dockercontainer.ListOptions{All: true})
	if err != nil {
		return nil, fmt.Errorf("listing the engine's containers: %w", err)
	}
	parent := make(map[string]string, len(all))
	for _, im := range all {
		parent[im.ID] = im.ParentID
	}
	users := map[string]int{}
	for _, c := range cs {
		seen := map[string]bool{}
		for id := c.ImageID; id != "" && !seen[id]; id = parent[id] {
			seen[id] = true
			users[id]++
		}
	}
	return users, nil
}

// removeImage removes image id (name, for people) unless containers use it (users, as
// imageUsers counts them; the engine refuses to remove an image a container made
// meanwhile uses) or decide keeps it, or with dryRun says it would; why says why it
// may go, decide whether it goes and why. It returns what it did, whether the image
// is gone (with dryRun: would be), or an error.
func removeImage(ctx context.Context, e Engine, id, name, why string, users int, decide func() (keep bool, reason string), dryRun bool) (string, bool, error) {
	short := shortID(id)
	if users > 0 {
		return fmt.Sprintf("kept image %s (%s): %s, but %d container(s) use it", short, name, why, users), false, nil
	}
	keep, reason := decide()
	switch {
	case keep:
		return fmt.Sprintf("kept image %s (%s): %s", short, name, reason), false, nil
	case dryRun:
		return fmt.Sprintf("would remove image %s (%s): %s", short, name, reason), true, nil
	}
	if _, err := e.ImageRemove(ctx, id, image.RemoveOptions{PruneChildren: true}); err != nil && !cerrdefs.IsNotFound(err) {
		if cerrdefs.IsConflict(err) {
			return fmt.Sprintf("kept image %s (%s): %s, but it is in use", short, name, why), false, nil
		}
		return "", false, fmt.Errorf("removing image %s: %w", short, err)
	}
	return fmt.Sprintf("removed image %s (%s): %s", short, name, reason), true, nil
}

// nonEmpty is lines without the empty ones.
func nonEmpty(lines []string) []string {
	out := lines[:0]
	for _, l := range lines {
		if l != "" {
			out = append(out, l)
		}
	}
	return out
}

// baseAnswer is the engine's answer to an inspect of a base image's name.
type baseAnswer struct {
	in  image.InspectResponse
	err error
}

// staleImage says why the derived image labelled l may go: made by another
// devsandbox version, or (dead) its base name names another image now, or none; for
// the others, "a derived image of devsandbox VERSION". Only a dead one goes whatever
// its last use.
func (b *Isolator) staleImage(ctx context.Context, e Engine, l map[string]string, bases map[string]baseAnswer) (why string, dead bool) {
	a, ok := bases[l[LabelBaseRef]]
	if !ok {
		a.in, a.err = e.ImageInspect(ctx, l[LabelBaseRef])
		bases[l[LabelBaseRef]] = a
	}
	in, err := a.in, a.err
	switch {
	case err != nil:
		return fmt.Sprintf("its base %s is gone", l[LabelBaseRef]), true
	case in.ID != l[LabelBase]:
		return fmt.Sprintf("%s names another image now", l[LabelBaseRef]), true
	case l[LabelVersion] != b.Version:
		return fmt.Sprintf("made by devsandbox %s, this is %s", l[LabelVersion], b.Version), false
	}
	return "derived from it by this devsandbox (" + b.Version + ")", false
}

// shipPaths are the paths a derived image adds to its base: the programs in
// container.ShipDir and the layout's files.
func shipPaths(pr programs, files []container.ImageFile) []string {
	var out []string
	for _, g := range []struct {
		name string
		p    program
	}{{initName, pr.init}, {proxyName, pr.proxy}} {
		if !g.p.none() {
			out = append(out, container.ShipDir+"/"+g.name)
		}
	}
	for _, f := range files {
		out = append(out, f.Path)
	}
	return out
}

// hiddenBy returns the first of vols (an image's VOLUMEs) at or above one of paths,
// and that path; "" when none is. Pure.
func hiddenBy(vols, paths []string) (vol, at string) {
	for _, v := range vols {
		c := path.Clean("/" + v)
		for _, p := range paths {
			if c == "/" || p == c || strings.HasPrefix(p, c+"/") {
				return v, p
			}
		}
	}
	return "", ""
}
