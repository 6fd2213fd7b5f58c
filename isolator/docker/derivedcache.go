package docker

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/image"

	"github.com/devsandbox/devsandbox/isolator/imageuse"
)

// otherEngineTimeout bounds prune's questions to an engine the derived-image cache
// names other than its own: one that hangs keeps its entries.
const otherEngineTimeout = 10 * time.Second

// cacheEntry is an entry of the derived-image cache: key is the engine's address, the
// base image's ID and what a run ships (derivedImage), id the derived image's ID.
type cacheEntry struct {
	key, host, base, id string
}

// cacheEntries are the entries of m, sorted by key; an entry no run can use (its key
// not as derivedImage writes them, or no ID) has host "".
func cacheEntries(m map[string]string) []cacheEntry {
	var out []cacheEntry
	for _, k := range slices.Sorted(maps.Keys(m)) {
		e := cacheEntry{key: k, id: m[k]}
		// The address comes first and may hold a space; the base's ID and the
		// content's hash have none.
		f := strings.Split(k, " ")
		if n := len(f); n >= 3 && f[0] != "" && f[n-2] != "" && m[k] != "" {
			e.host, e.base = strings.Join(f[:n-2], " "), f[n-2]
		}
		out = append(out, e)
	}
	return out
}

// imageLook says whether an engine has the image of an ID, and when it got it
// (madeAt; asked only when prune needs it), or why the engine could not say.
type imageLook func(id string) (there bool, made func() time.Time, err error)

// pruneDerivedCache removes from the derived-image cache in stateRoot
// (derivedCacheFile) the entries no run will use, or with dryRun only says so: one
// whose image this prune removed (or would: gone), one whose image the engine the
// entry names no longer has, and one no run used within maxAge by the rule prune
// keeps images by (imageuse.Decide on the image's recorded use; with none, on when
// the engine got it). An entry of this prune's engine (e, at host) whose image a
// container uses (users) stays. The entries of another engine are asked about when
// its address is a Unix socket (Dial; nothing but the address is needed to reach
// one), each within otherEngineTimeout; an engine that cannot be asked (it does not
// answer, or is reached over TCP, whose TLS material only its configuration names)
// keeps its entries unless no run used them within maxAge, and a line says how many
// were not checked and why. Entries no run can use (cacheEntries) go. The file is
// rewritten under the lock runs write it under (updateRecords, which follows no
// link), and an entry goes only if it still holds the ID judged: one a run wrote
// meanwhile stays. A dry run writes nothing and takes no lock. It returns one line per
// entry removed (or that would be), and the lines of what was not checked.
func (b *Isolator) pruneDerivedCache(ctx context.Context, e Engine, host string, all []image.Summary, users map[string]int, stateRoot string, gone map[string]bool, now time.Time, maxAge time.Duration, dryRun bool) ([]string, error) {
	path := filepath.Join(stateRoot, derivedCacheFile)
	m, err := loadRecords(path)
	if err != nil {
		return nil, fmt.Errorf("pruning the derived-image cache: %w; left as it is (devsandbox writes a regular file there: remove it and runs make it anew)", err)
	}
	if len(m) == 0 {
		return nil, nil
	}
	byID := make(map[string]image.Summary, len(all))
	for _, im := range all {
		byID[im.ID] = im
	}
	looks := map[string]imageLook{host: func(id string) (bool, func() time.Time, error) {
		im, ok := byID[id]
		return ok, func() time.Time { return madeAt(ctx, e, im) }, nil
	}}
	var closers []func()
	defer func() {
		for _, c := range closers {
			c()
		}
	}()
	verb := "removed"
	if dryRun {
		verb = "would remove"
	}
	var out []string
	drop := map[string]string{}
	unchecked := map[string]int{}
	notAsked := map[string]error{}
	for _, ent := range cacheEntries(m) {
		if ent.host == "" {
			drop[ent.key] = ent.id
			out = append(out, fmt.Sprintf("%s an entry of %s: %q, not an entry a run can use", verb, path, ent.key))
			continue
		}
		look, ok := looks[ent.host]
		if !ok {
			var c func()
			look, c = b.lookOther(ctx, ent.host)
			looks[ent.host] = look
			closers = append(closers, c)
		}
		what := fmt.Sprintf("the image %s (derived from %s) on %s", shortID(ent.id), shortID(ent.base), ent.host)
		why, lookErr := b.staleEntry(ent, what, look, ent.host == host && users[ent.id] > 0, stateRoot, gone, now, maxAge, dryRun)
		if why == "" {
			if lookErr != nil {
				unchecked[ent.host]++
				notAsked[ent.host] = lookErr
			}
			continue
		}
		drop[ent.key] = ent.id
		out = append(out, fmt.Sprintf("%s an entry of %s: %s", verb, path, why))
	}
	for _, h := range slices.Sorted(maps.Keys(unchecked)) {
		n := fmt.Sprintf("images of %d entries", unchecked[h])
		if unchecked[h] == 1 {
			n = "image of 1 entry"
		}
		out = append(out, fmt.Sprintf("not checked: whether the engine at %s still has the %s of %s, kept: a run used them within --days, or no use of them is recorded: %v", h, n, path, notAsked[h]))
	}
	if b.afterCacheCheck != nil {
		b.afterCacheCheck()
	}
	if dryRun || len(drop) == 0 {
		return out, nil
	}
	err = updateRecords(path, func(m map[string]string) bool {
		changed := false
		for k, id := range drop {
			if v, ok := m[k]; ok && v == id {
				delete(m, k)
				changed = true
			}
		}
		return changed
	})
	if err != nil {
		return nil, fmt.Errorf("pruning the derived-image cache: %w", err)
	}
	return out, nil
}

// staleEntry says why the cache entry ent (what, for people) goes ("": it stays), and
// why its engine (look) could not say whether it has its image (nil: it did, or was
// not asked); used: a container of prune's engine uses the image.
func (b *Isolator) staleEntry(ent cacheEntry, what string, look imageLook, used bool, stateRoot string, gone map[string]bool, now time.Time, maxAge time.Duration, dryRun bool) (string, error) {
	if gone[ent.id] {
		if dryRun {
			return what + ", which this prune would remove", nil
		}
		return what + ", which this prune removed", nil
	}
	there, made, err := look(ent.id)
	switch {
	case err != nil:
		made = func() time.Time { return time.Time{} } // not known: the record alone decides
	case !there:
		return what + ", but that engine no longer has it", nil
	case used:
		return "", nil
	}
	last := imageuse.Last(stateRoot, imageuse.Docker, ent.id)
	at := time.Time{}
	if last.IsZero() {
		at = made()
	}
	if keep, reason := imageuse.Decide(what, last, at, now, maxAge); !keep {
		return reason, nil
	}
	return "", err
}

// lookOther asks the engine at host about images, and returns how, and its client's
// release. Only a Unix socket's engine is dialled.
func (b *Isolator) lookOther(ctx context.Context, host string) (imageLook, func()) {
	failed := func(err error) imageLook {
		return func(string) (bool, func() time.Time, error) { return false, nil, err }
	}
	if !strings.HasPrefix(host, "unix://") {
		return failed(errors.New("an engine reached over the network is asked only by a prune whose configuration names it (its TLS material is there)")), func() {}
	}
	dial := b.dialAt
	if dial == nil {
		dial = func(a Address) (Engine, error) {
			p, err := a.Pin()
			if err != nil {
				return nil, fmt.Errorf("the engine does not answer: %w", err)
			}
			e, _, err := Dial(ctx, p) // pinned and judged, as a run's engine is
			if r, ok := refused(err); ok {
				return nil, errors.New(r.st.Reason)
			}
			return e, err
		}
	}
	e, err := dial(Address{Host: host, Origin: "the derived-image cache"})
	if err != nil {
		return failed(err), func() {}
	}
	var down error
	return func(id string) (bool, func() time.Time, error) {
		if down != nil {
			return false, nil, down
		}
		c, cancel := context.WithTimeout(ctx, otherEngineTimeout)
		defer cancel()
		in, err := e.ImageInspect(c, id)
		switch {
		case cerrdefs.IsNotFound(err):
			return false, nil, nil
		case err != nil:
			down = fmt.Errorf("the engine does not answer: %w", err)
			return false, nil, down
		}
		return in.ID == id, func() time.Time { return inspectMade(in) }, nil
	}, func() { _ = e.Close() }
}

// inspectMade is when the engine got the image in: the later of its Created and the
// engine's record of its last naming (as madeAt).
func inspectMade(in image.InspectResponse) time.Time {
	t, _ := time.Parse(time.RFC3339Nano, in.Created)
	if in.Metadata.LastTagTime.After(t) {
		t = in.Metadata.LastTagTime
	}
	return t
}
