// Package lastingthread runs a function on a thread that lives as long as the
// process, for the start of a child with a parent-death signal.
//
// The kernel sends a child's parent-death signal (Pdeathsig) when the THREAD that
// forked it ends, not the process, and the Go runtime ends a thread whose goroutine
// returns while locked to it (runtime.LockOSThread without an unlock): a goroutine
// of any package of the program (an embedder's, which the library does not see)
// that lands on the thread that forked bwrap, locks it and returns kills bwrap, and
// the sandbox with it. A fork in Run keeps the child safe from that.
//
// Run calls its function on the calling goroutine when it is on the process's main
// thread, which the runtime never ends (mexit wedges m0 rather than end it: on
// Linux, a main thread's exit leaves the process an unwaitable zombie), at no cost.
// Else it hands the function to one goroutine locked to a thread of its own for
// ever, started at the first such call: two goroutine switches, and one thread for
// the process's life. devsandbox's own main goroutine is not kept on the main
// thread to spare the hand-off: locked there, each of its wake-ups waits for that
// one thread, which made the launch slower under load (docs/performance.md, s42).
package lastingthread

import (
	"runtime"
	"sync"
)

// Run calls f on a thread that lives as long as the process, and returns once f has
// returned. f runs on the caller's goroutine when the caller is on the main thread;
// else on another goroutine (the one that owns the lasting thread): f must not rely
// on the caller's thread state, and f's panic is raised again in the caller. Calls
// from many goroutines are made one after another.
func Run(f func()) {
	// Locked while f runs: the goroutine stays on the main thread once found there.
	// Counted: a caller's own lock is kept.
	runtime.LockOSThread()
	if onMainThread() {
		defer runtime.UnlockOSThread()
		f()
		return
	}
	// Unlocked while f is away: this thread may then run the lasting goroutine.
	runtime.UnlockOSThread()
	handOff(f)
}

var (
	start sync.Once
	work  chan func()
)

// handOff runs f on the lasting thread's goroutine.
func handOff(f func()) {
	start.Do(func() {
		work = make(chan func())
		go serve(work)
	})
	done := make(chan any, 1)
	work <- func() {
		defer func() { done <- recover() }()
		f()
	}
	if p := <-done; p != nil {
		panic(p)
	}
}

// serve runs the work it is handed, for ever, locked to its thread: a goroutine
// that never returns keeps its thread, and no other goroutine runs on a locked one.
func serve(work <-chan func()) {
	runtime.LockOSThread()
	for f := range work {
		f()
	}
}
