// Package watch keeps the host from trusting what a sandbox wrote while it runs: the
// git metadata the host's git obeys (pointer files, configs, hooks, nested
// repositories, gitlinks) and the project files other host tools run (Plan.Tripwires,
// and Plan.Subdir below the project's top directory).
//
// Start records the state the host left (the baseline) before the sandbox starts;
// then, every Interval while the run goes on and once more when it ends, whatever the
// sandbox changed is checked: a config may gain only variables ordinary git work
// writes (gitconfig.Checker), a hook only git's samples, a linked worktree's pointers
// only what git worktree add writes, a gitdir file must point into the project, and a
// nested repository or submodule must pass the same checks. What fails is moved to the
// project's quarantine directory (out of the sandbox's reach) and reported at once; a
// config file that had a version before gets it back.
//
// Not guaranteed: detection is not prevention. Between a write and the next check
// (Interval, and the scan for new repositories every ScanInterval or more) the host's
// git could read what the sandbox wrote; that is why the files that exist at launch are
// also mounted read-only where git's ordinary work allows (see plan). A run that is
// killed (kill -9) skips the final check. New repositories below directories the mask
// scan skips (node_modules) are found only when a gitlink names them (in the index
// file or, for a split index, its shared index; an index git would read and the
// watch cannot is moved aside). Plan.Subdir's
// files are found by the same scan: only every ScanInterval or more, and never below
// a skipped directory.
package watch

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/isolator/maskscan"
)

// Interval is how often the metadata and tripwires are checked during a run.
const Interval = 200 * time.Millisecond

// ScanInterval is how often, at least, the project is scanned for new .git entries
// (longer on a project whose scan takes long: 20 times its duration).
const ScanInterval = 2 * time.Second

// Watcher watches one run.
type Watcher struct {
	p      *isolator.Plan
	warn   func(string)
	c      *checker
	dirs   []*gitDir
	nested map[string]*nestedEntry
	index  stamp
	shared map[string]stamp // a split index's shared index files, as last seen
	// indexRead and indexCost are when the index was last read and how long that took.
	indexRead time.Time
	indexCost time.Duration
	final     bool // the last check, at Stop
	tripped   map[string]bool
	// subdir holds the files host tools read in every directory (Plan.Subdir) that
	// were there at launch, and subTripped those reported since.
	subdir     map[string]stamp
	subTripped map[string]bool
	said       map[string]bool // warnings given once
	started    time.Time       // names this run's quarantine directory (session)

	mu       sync.Mutex
	stop     chan struct{}
	done     chan struct{}
	lastScan time.Time
	scanCost time.Duration
}

// nestedEntry is a .git entry below the project: a directory (a repository) or a
// gitdir file.
type nestedEntry struct {
	dir  *gitDir
	file []byte
	st   stamp
}

// Start records the baseline of p and watches it until Stop; warn receives one
// sentence per finding, as it is made.
func Start(p *isolator.Plan, warn func(string)) *Watcher {
	w := &Watcher{p: p, warn: warn, nested: map[string]*nestedEntry{}, tripped: map[string]bool{}, said: map[string]bool{},
		subdir: map[string]stamp{}, subTripped: map[string]bool{},
		stop: make(chan struct{}), done: make(chan struct{}), started: time.Now()}
	w.c = &checker{project: p.Project.Dir, readOnly: map[string]uint64{}, pin: w.pinDir}
	for _, m := range p.Mounts {
		if m.Kind == isolator.Bind && m.ReadOnly && m.Source == m.Target(p.User.HostHome) {
			if fi, err := os.Lstat(m.Source); err == nil {
				w.c.readOnly[m.Source] = stampOf(fi).ino
			}
		}
	}
	for _, d := range p.Git.Dirs {
		w.dirs = append(w.dirs, w.c.snapshot(d, plain))
	}
	// The project's own .git file (a linked worktree, a submodule) is known too.
	if own := filepath.Join(p.Project.Dir, ".git"); !w.isGitDir(own) {
		if e := w.baselineEntry(own); e != nil {
			w.nested[own] = e
		}
	}
	for _, n := range p.Git.Nested {
		if e := w.baselineEntry(n); e != nil {
			w.nested[n] = e
		}
	}
	w.index, w.shared = lstamp(p.Git.Index), sharedIndexes(p.Git.Index)
	for _, f := range p.Subdir.Present {
		if fi, err := os.Lstat(f); err == nil {
			w.subdir[f] = stampOf(fi)
		}
	}
	ls := newLister()
	for _, tw := range p.Tripwires {
		for _, m := range ls.present(tw) {
			w.tripped[m] = true // there already (a tripwire made for a file that appeared since)
		}
	}
	w.lastScan = time.Now()
	w.record()
	go w.loop()
	return w
}

// Stop ends the watch with a last check, new repositories included.
func (w *Watcher) Stop() {
	close(w.stop)
	<-w.done
	w.final = true
	w.check(true)
}

func (w *Watcher) loop() {
	defer close(w.done)
	t := time.NewTicker(Interval)
	defer t.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-t.C:
			w.check(time.Since(w.lastScan) >= max(ScanInterval, 20*w.scanCost))
		}
	}
}

// check runs every check once; scan also looks for new .git entries in the project.
func (w *Watcher) check(scan bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.tripwires()
	for _, g := range w.dirs {
		w.handle(w.c.check(g))
	}
	var candidates []string
	for path, e := range w.nested {
		probs, gone := w.checkNested(path, e)
		if gone {
			delete(w.nested, path)
		}
		w.handle(probs)
	}
	candidates = append(candidates, w.gitlinks(w.final)...)
	if scan {
		start := time.Now()
		candidates = append(candidates, w.scan()...)
		w.lastScan, w.scanCost = time.Now(), time.Since(start)
	}
	for _, c := range candidates {
		if _, known := w.nested[c]; known || w.isGitDir(c) {
			continue
		}
		if _, err := os.Lstat(c); err != nil || w.linked(c) {
			continue // a gitlink through a symlink: git on the host does not enter it
		}
		w.handle(w.checkNew(c))
	}
}

// isGitDir reports whether p is one of the watched git dirs (the project's own .git).
func (w *Watcher) isGitDir(p string) bool {
	for _, g := range w.dirs {
		if g.path == p {
			return true
		}
	}
	return false
}

// tripwires reports (and quarantines, where asked) the tripwires that appeared, and
// forgets those that are gone (one created again is reported again).
func (w *Watcher) tripwires() {
	ls := newLister()
	for _, tw := range w.p.Tripwires {
		present := ls.present(tw)
		for p := range w.tripped {
			if tw.Covers(p) && !slices.Contains(present, p) {
				delete(w.tripped, p)
			}
		}
		for _, p := range present {
			switch {
			case tw.Quarantine:
				w.handle([]problem{{path: p, why: tw.Why}})
			case !w.tripped[p]:
				w.tripped[p] = true
				w.warn(fmt.Sprintf("the sandbox created %s: %s. Review it before using those tools outside the sandbox", p, tw.Why))
			}
		}
	}
}

// lister lists each directory once for one pass over the tripwires (several
// patterns name the project's top directory, and most tripwires lie in a few
// directories, most of which do not exist).
type lister struct {
	matched map[string][]string        // a pattern's directory listNames cannot list: os.ReadDir's names
	names   map[string]map[string]bool // a path's directory: its names (nil: it does not exist)
	unknown map[string]bool            // a path's directory that could not be listed: lstat
}

// listMax bounds the names listNames reads: a larger directory is cheaper to ask
// about path by path.
const listMax = 512

func newLister() lister {
	return lister{matched: map[string][]string{}, names: map[string]map[string]bool{}, unknown: map[string]bool{}}
}

// present returns the paths of tw that exist: its Path, or the entries of its
// directory that match its pattern, sorted. A Path whose directory's listing, made in
// this pass, lacks its name does not exist; one the listing holds is confirmed with
// lstat(2), and so is every Path whose directory could not be listed (listNames). A
// pattern is matched against the same listing (one per directory and pass for both
// kinds), or against os.ReadDir's when listNames cannot answer.
func (l lister) present(tw isolator.Tripwire) []string {
	dir := filepath.Dir(tw.Path)
	names, known := l.list(dir)
	if !tw.Pattern {
		if known && !names[filepath.Base(tw.Path)] {
			return nil
		}
		if _, err := os.Lstat(tw.Path); err != nil {
			return nil
		}
		return []string{tw.Path}
	}
	var all []string
	if known {
		for n := range names {
			all = append(all, n)
		}
	} else if all, known = l.matched[dir]; !known {
		ents, _ := os.ReadDir(dir) // none when it cannot be read
		for _, e := range ents {
			all = append(all, e.Name())
		}
		l.matched[dir] = all
	}
	var out []string
	for _, n := range all {
		if ok, _ := path.Match(filepath.Base(tw.Path), n); ok {
			out = append(out, filepath.Join(dir, n))
		}
	}
	slices.Sort(out)
	return out
}

// list returns dir's names from this pass's listing (listNames, made once per
// directory); known is false when the listing cannot answer.
func (l lister) list(dir string) (names map[string]bool, known bool) {
	if l.unknown[dir] {
		return nil, false
	}
	if names, listed := l.names[dir]; listed {
		return names, true
	}
	names, ok := listNames(dir)
	if !ok {
		l.unknown[dir] = true
		return nil, false
	}
	l.names[dir] = names
	return names, true
}

// handle quarantines each problem, puts back the previous version where there is one,
// and reports it.
func (w *Watcher) handle(probs []problem) {
	for _, pr := range probs {
		m, err := w.moveAside(pr.path, pr.restore)
		if err != nil {
			if !os.IsNotExist(err) {
				w.warn(fmt.Sprintf("the sandbox wrote %s: %s; it could NOT be moved aside (%v): remove it before you run git there", pr.path, pr.why, err))
			}
			continue
		}
		back := ""
		switch {
		case m.via != "":
			back = "; it lies behind the symlink " + m.via + ", which was moved instead"
		case m.restored:
			back = "; the version from before the run is back in place"
		case m.restoreErr != nil:
			back = fmt.Sprintf("; the version from before the run could NOT be put back (%v): restore it from the quarantine before you run git there", m.restoreErr)
		}
		if len(m.extra) > 0 {
			back += fmt.Sprintf("; what took its name meanwhile was moved to %s", strings.Join(m.extra, ", "))
		}
		w.warn(fmt.Sprintf("the sandbox wrote %s: %s. It was moved to %s%s — review it, and the sandboxed program that wrote it", pr.path, pr.why, m.dest, back))
	}
}

// session names this run's quarantine directory: its start in local time and the
// process. It is formatted only when something is quarantined: the first local time
// formatted loads the time zone (/etc/localtime), which a launch need not pay for.
func (w *Watcher) session() string {
	return w.started.Format("20060102-150405") + "-" + strconv.Itoa(os.Getpid())
}

// record writes the project's gitdir chain for the next run to compare (plan), once:
// complete in a file of its own, then linked into place, never over a record there.
// A run planned meanwhile (another session of the project) reads the whole record
// or none; written in place, it could read it empty and stop on a false alarm.
func (w *Watcher) record() {
	g := w.p.Git
	if g.PointerRecord == "" || g.Pointers == "" {
		return
	}
	if _, err := os.Lstat(g.PointerRecord); err == nil {
		return
	}
	dir := filepath.Dir(g.PointerRecord)
	_ = os.MkdirAll(dir, 0o700)
	f, err := os.CreateTemp(dir, filepath.Base(g.PointerRecord)+".*.tmp") // mode 0600
	if err != nil {
		return
	}
	_, err = f.WriteString(g.Pointers)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		_ = os.Link(f.Name(), g.PointerRecord) // EEXIST: a session recorded it first
	}
	_ = os.Remove(f.Name())
}

// scan returns the .git entries below the project (the mask scan, with its cache),
// and reports the files host tools read in every directory (Plan.Subdir) that the
// sandbox created or replaced since launch, each once until it is gone again.
func (w *Watcher) scan() []string {
	g := w.p.Git
	ms, err := maskscan.Scan(w.p.Project.Dir, maskscan.Matcher{Mask: g.ScanMask, Allow: g.ScanAllow, Skip: g.ScanSkip, Mark: w.p.Subdir.ScanMarks()}, g.ScanCache)
	if err != nil {
		// A directory the sandbox made unreadable hides what is below it from the
		// scan (and from the host's git, until it is made readable again).
		if msg := fmt.Sprintf("devsandbox could not look for repositories and tool files the sandbox made in the project (%v); review the project before you run git or a toolchain in it", err); !w.said[msg] {
			w.said[msg] = true
			w.warn(msg)
		}
		return nil
	}
	var out []string
	found := map[string]bool{}
	for _, m := range ms {
		switch {
		case !m.Marked:
		case filepath.Base(m.Path) == ".git":
			out = append(out, m.Path)
		case w.p.Subdir.Covers(w.p.Project.Dir, m.Path):
			found[m.Path] = true
			if w.subTripped[m.Path] || w.launched(m.Path) {
				continue
			}
			w.subTripped[m.Path] = true
			w.warn(fmt.Sprintf("the sandbox created %s: %s. Review it before using those tools outside the sandbox", m.Path, w.p.Subdir.Why))
		}
	}
	for p := range w.subTripped {
		if !found[p] {
			delete(w.subTripped, p)
		}
	}
	return out
}

// launched reports whether p is a file of Plan.Subdir that was there at launch and
// still is: the same inode and type (a symlink replaced by a file is new).
func (w *Watcher) launched(p string) bool {
	was, ok := w.subdir[p]
	if !ok {
		return false
	}
	fi, err := os.Lstat(p)
	if err != nil {
		return false
	}
	now := stampOf(fi)
	return now.ino == was.ino && now.mode.Type() == was.mode.Type()
}
