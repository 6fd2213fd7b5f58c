package planner

import (
	"slices"

	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/isolator/etcsnap"
)

// SystemHead is the default system view (no sandbox.system_binds) worked out on
// another goroutine while the configuration loads (StartSystem): Build uses it when
// the configuration asks for the default view with the same snapshot root, and works
// the view out itself otherwise. The view is the same one Build would make: the same
// calls on the same host paths, made about a millisecond earlier.
type SystemHead struct {
	snapshots string
	done      chan struct{}
	view      isolator.SystemView
	err       error
}

// StartSystem starts working out the default system view for a user whose state
// lives in stateHome, with pr's host calls; then, when not nil, is called with the
// view on the same goroutine (where the bwrap backend starts opening its /etc
// snapshot) before Wait returns.
func StartSystem(pr Probe, stateHome string, then func(isolator.SystemView)) *SystemHead {
	s := &SystemHead{snapshots: etcsnap.Root(stateHome), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		s.view, s.err = systemView(pr, nil, s.snapshots)
		if s.err == nil && then != nil {
			then(s.view)
		}
	}()
	return s
}

// Wait waits until the view and then are done; it may be called more than once.
func (s *SystemHead) Wait() {
	if s != nil {
		<-s.done
	}
}

// viewFor returns the view when it is the one binds and snapshots ask for, after
// waiting for it.
func (s *SystemHead) viewFor(binds []string, snapshots string) (isolator.SystemView, bool, error) {
	if s == nil || len(binds) > 0 || s.snapshots != snapshots {
		return isolator.SystemView{}, false, nil
	}
	s.Wait()
	v := s.view
	v.Paths = slices.Clone(v.Paths) // the Plan's own, whatever then kept
	return v, true, s.err
}
