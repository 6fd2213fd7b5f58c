package bwrap

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/isolator/etcsnap"
)

// etcEntries is what the /etc snapshot of p holds (package etcsnap): each Copy file
// of the system view (/etc/passwd as SystemView.Passwd when the Plan has one); each /etc directory the view binds as a tree, copied whole when
// it can be (etcsnap.Entry.Tree; else a mount point the directory is bound over), or
// as a mount point when a mount of p lands inside it; and a mount point for every
// other /etc entry a mount places there. ok is false when p copies nothing, when its snapshot root lies
// in or holds a directory the sandbox can write (what the sandbox writes is never
// what a later sandbox trusts as its /etc), or when something lands in /etc that
// needs a mount point the snapshot cannot know the kind of; the files are then copied
// one by one, as without a snapshot.
func etcEntries(p *isolator.Plan) (entries []etcsnap.Entry, ok bool) {
	return etcEntriesPasswd(p, true)
}

// etcEntriesPasswd is etcEntries, with the host's /etc/passwd in place of
// SystemView.Passwd unless passwd (what a snapshot opened ahead holds when it
// guessed another Passwd: EtcHead.use).
func etcEntriesPasswd(p *isolator.Plan, passwd bool) (entries []etcsnap.Entry, ok bool) {
	root := p.System.Snapshot
	if p.System.Host || root == "" {
		return nil, false
	}
	for _, w := range isolator.Writable(p) {
		if w != "" && (isolator.Within(root, w) || isolator.Within(w, root)) {
			return nil, false
		}
	}
	var bound []string // /etc directories that may be bound over the snapshot
	kinds := make(map[string]bool, len(p.System.Paths))
	var dsts []string // where p's mounts land in /etc
	for _, m := range p.Mounts {
		if dst := m.Target(p.User.HostHome); isolator.Within(dst, "/etc") {
			dsts = append(dsts, dst)
		}
	}
	copies := 0
	for _, sp := range p.System.Paths {
		if !isolator.Within(sp.Path, "/etc") {
			continue
		}
		if sp.Path == "/etc" || sp.Link != "" {
			return nil, false
		}
		name := strings.TrimPrefix(sp.Path, "/etc/")
		e := etcsnap.Entry{Name: name}
		switch {
		case sp.Copy && sp.Path == isolator.PasswdPath && p.System.Passwd != nil && passwd:
			// The sandbox's own (SystemView.Passwd) rather than the host's bound over
			// it: one mount less for bwrap.
			e.Content = string(p.System.Passwd)
			copies++
		case sp.Copy:
			e.Source = sp.Path
			copies++
		default:
			// The default view binds directories only: its regular files are copies.
			// A directory is copied whole unless a mount lands inside it (the copy
			// would need its mount point).
			e.Source, e.Tree = sp.Path, true
			for _, d := range dsts {
				if isolator.Within(d, sp.Path) {
					e = etcsnap.Entry{Name: name, Dir: true}
					break
				}
			}
			bound = append(bound, sp.Path)
		}
		entries = append(entries, e)
		kinds[name] = e.Dir || e.Tree
	}
	if copies == 0 {
		return nil, false
	}
	for _, m := range p.Mounts {
		dst := m.Target(p.User.HostHome)
		if !isolator.Within(dst, "/etc") || withinAny(dst, bound) {
			continue
		}
		isDir, exists := kinds[strings.TrimPrefix(dst, "/etc/")]
		switch {
		case !exists:
			return nil, false
		case m.Kind == isolator.Data || m.Kind == isolator.MaskFile:
			ok = !isDir
		case m.Kind == isolator.MaskDir || m.Kind == isolator.TmpDir:
			ok = isDir
		default:
			ok = false // a bind's kind is the host's, unknown here
		}
		if !ok {
			return nil, false
		}
	}
	if etcsnap.Validate(entries) != nil {
		return nil, false
	}
	return entries, true
}

// holdsPasswd reports whether the snapshot of entries holds p's SystemView.Passwd
// at /etc/passwd: then nothing is bound over it.
func holdsPasswd(entries []etcsnap.Entry, p *isolator.Plan) bool {
	for _, e := range entries {
		if e.Name == "passwd" {
			return p.System.Passwd != nil && e.Content == string(p.System.Passwd)
		}
	}
	return false
}

// copiedTree reports whether the snapshot of entries holds the host directory dir
// copied whole: then it is not bound.
func copiedTree(entries []etcsnap.Entry, dir string) bool {
	for _, e := range entries {
		if e.Tree && e.Source == dir {
			return true
		}
	}
	return false
}

func withinAny(p string, dirs []string) bool {
	for _, d := range dirs {
		if isolator.Within(p, d) {
			return true
		}
	}
	return false
}

// openEntries opens (reusing or building) the /etc snapshot of entries for p. A
// snapshot that cannot be had is no loss of protection, only of speed: the files are
// then copied one by one, and the error says why (for --debug).
func openEntries(p *isolator.Plan, entries []etcsnap.Entry) (*etcsnap.Snapshot, error) {
	s, err := etcsnap.Open(p.System.Snapshot, entries, time.Now())
	if err != nil {
		return nil, fmt.Errorf("the /etc snapshot is not used this time, its files are copied one by one: %w", err)
	}
	return s, nil
}

// etcOpening is the /etc snapshot of a Plan being opened on another goroutine
// (startEtc), while Run prepares the rest of the host side: its reuse check (a stat
// of each source for the key, then of each name in the snapshot) is the longest step
// of prepare, and depends on nothing prepare makes.
type etcOpening struct {
	plan    *isolator.Plan
	entries []etcsnap.Entry
	ok      bool
	done    chan struct{}
	snap    *etcsnap.Snapshot
	err     error
	taken   bool
}

// startEtc starts opening the /etc snapshot of p, the Plan as built (before its
// sources are pinned), or takes head's when head opened the same snapshot for the
// same entries. take returns it for the pinned Plan; discard releases it when Run
// returns before that.
func startEtc(p *isolator.Plan, head *EtcHead) *etcOpening {
	o := &etcOpening{plan: p, done: make(chan struct{})}
	o.entries, o.ok = etcEntries(p)
	if ahead := head.use(p, o.entries, o.ok); ahead != nil {
		return ahead
	}
	if !o.ok {
		close(o.done)
		return o
	}
	go func() {
		defer close(o.done)
		o.snap, o.err = openEntries(p, o.entries)
	}()
	return o
}

// take waits for the snapshot and returns it for pp, the pinned copy of the Plan
// startEtc was given (nil: the files are copied one by one, and debug says why when
// a snapshot failed). Pinning drops the optional mounts whose source is gone, which
// can change what the snapshot must hold; then the entries are worked out again for
// pp and, where they differ, the snapshot is opened for pp's, as Run did before.
// The entries returned are what the snapshot holds (etcEntries of pp, with the
// trees it bound rather than copied as mount points; nil with no snapshot), for
// render.
func (o *etcOpening) take(pp *isolator.Plan, debug func(string)) (*etcsnap.Snapshot, []etcsnap.Entry) {
	<-o.done
	o.taken = true
	s, err := o.snap, o.err
	if len(pp.Mounts) != len(o.plan.Mounts) {
		again, ok := etcEntries(pp)
		if ok != o.ok || !slices.Equal(again, o.entries) {
			if s != nil {
				s.Close()
			}
			s, err = nil, nil
			if ok {
				s, err = openEntries(pp, again)
			}
		}
	}
	if err != nil && debug != nil {
		debug(err.Error())
	}
	if s == nil {
		return nil, nil
	}
	if debug != nil {
		if s.Built {
			debug("the /etc snapshot " + s.Path + " was built for this launch (its host files changed, or it was not there)")
		}
		for _, n := range s.Notes {
			debug(n)
		}
	}
	return s, s.Entries
}

// discard releases the snapshot when take was never called.
func (o *etcOpening) discard() {
	if o.taken {
		return
	}
	<-o.done
	o.taken = true
	if o.snap != nil {
		o.snap.Close()
	}
}

// etcDescriptor returns the descriptor bwrap mounts the snapshot from.
func etcDescriptor(s *etcsnap.Snapshot) (*os.File, error) {
	if s == nil {
		return nil, fmt.Errorf("%w: no /etc snapshot was opened", isolator.ErrProtection)
	}
	return s.Dir()
}

// etcScript describes the snapshot descriptor f for --dry-run.
func etcScript(f File) string {
	var files, trees, points []string
	for _, e := range f.Snapshot {
		switch {
		case e.Content != "":
			files = append(files, fmt.Sprintf("/etc/%s, generated (%d bytes; the sandbox's own, the user's entry naming the command's home)", e.Name, len(e.Content)))
		case e.Tree:
			trees = append(trees, e.Source+"/")
		case e.Source != "":
			files = append(files, e.Source)
		case e.Dir:
			points = append(points, e.Name+"/")
		default:
			points = append(points, e.Name)
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# fd %d: /etc, a read-only snapshot directory in %s (reused while the files are unchanged,\n", f.FD, f.Source)
	b.WriteString("#   else built at launch; if it cannot be, each file is copied with --file instead) of the host files:\n")
	for _, s := range files {
		fmt.Fprintf(&b, "#   %s\n", s)
	}
	if len(trees) > 0 {
		fmt.Fprintf(&b, "#   and the directories, copied whole: %s\n", strings.Join(trees, " "))
		b.WriteString("#   (files as copies, symbolic links as links; what the user cannot read or enter as an empty entry of\n")
		fmt.Fprintf(&b, "#   mode 0000); one over %d entries, %d files and directories or %d MiB, with an entry a copy cannot\n", etcsnap.MaxTreeEntries, etcsnap.MaxTreeStats, etcsnap.MaxTreeBytes>>20)
		b.WriteString("#   show the same is bound read-only over an empty directory instead (--ro-bind-try, as without a\n")
		b.WriteString("#   snapshot; --debug says which and why); one changed in the last seconds makes that launch copy\n")
		b.WriteString("#   the files one by one\n")
	}
	if len(points) > 0 {
		fmt.Fprintf(&b, "#   with empty mount points for: %s\n", strings.Join(points, " "))
	}
	return b.String()
}

// EtcHead is the /etc snapshot of a system view opened before the Plan is built
// (PrestartEtc, EtcAhead), on another goroutine while the Plan is built. Run uses it
// only when the Plan's snapshot has the same root and exactly the same entries
// (etcEntries of the Plan, with its mounts and writable directories); otherwise it is
// released and the Plan's own is opened, as without it. The checks of the snapshot
// (etcsnap.Open) are the same; they run earlier.
type EtcHead struct {
	o    *etcOpening
	used bool
	wait func() // until o is set (EtcAhead); nil: it is
}

// PrestartEtc starts opening the /etc snapshot that a Plan with the system view v
// and nothing else in /etc would use; nil when it would use none.
func PrestartEtc(v isolator.SystemView) *EtcHead {
	o := startEtc(&isolator.Plan{System: v}, nil)
	if !o.ok {
		return nil
	}
	return &EtcHead{o: o}
}

// ViewAhead is a system view being worked out ahead: planner.Loaded.System.
type ViewAhead interface {
	// Then has f called with the view once it is known (never if it fails).
	Then(f func(isolator.SystemView))
	// Wait returns once the view and f are done.
	Wait()
}

// EtcAhead has the /etc snapshot of sys's view (PrestartEtc) opened on sys's
// goroutine as soon as the view is known, for Isolator.EtcHead: a program that loads
// with planner.Load or LoadDir and runs the Plan with this backend passes
// EtcAhead(loaded.System). sys may be a nil *planner.SystemHead (no view ahead): the
// head then holds nothing. Close releases it when no Run used it.
func EtcAhead(sys ViewAhead) *EtcHead {
	h := &EtcHead{wait: sys.Wait}
	sys.Then(func(v isolator.SystemView) {
		if p := PrestartEtc(v); p != nil {
			h.o = p.o
		}
	})
	return h
}

// opening waits until the head is set and returns its opening (nil: none).
func (h *EtcHead) opening() *etcOpening {
	if h.wait != nil {
		h.wait()
	}
	return h.o
}

// use returns the opening when it is for p's snapshot root and entries; otherwise
// it releases it and returns nil. Only the first call can return it.
func (h *EtcHead) use(p *isolator.Plan, entries []etcsnap.Entry, ok bool) *etcOpening {
	if h == nil || h.used {
		return nil
	}
	h.used = true
	o := h.opening()
	if o == nil {
		return nil
	}
	if ok && o.plan.System.Snapshot == p.System.Snapshot && slices.Equal(o.entries, entries) {
		o.plan = p // take compares the pinned Plan's mounts with p's
		return o
	}
	if ok && o.plan.System.Snapshot == p.System.Snapshot && p.System.Passwd != nil {
		// The head guessed another Passwd (the Plan's HOME is another one): its
		// snapshot holds the host's file, and render binds p's over it, as it did
		// before the snapshot held the sandbox's own.
		if host, ok := etcEntriesPasswd(p, false); ok && slices.Equal(o.entries, host) {
			o.plan = p
			return o
		}
	}
	o.discard()
	return nil
}

// Close releases the snapshot unless Run used it (Run releases it then).
func (h *EtcHead) Close() {
	if h != nil && !h.used {
		h.used = true
		if o := h.opening(); o != nil {
			o.discard()
		}
	}
}
