// Package flock waits for an flock(2) lock without tying its caller to the wait: a
// run that waits for another process's lock must still end when its context ends or
// a signal asks it to.
package flock

import (
	"context"
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// ErrInterrupted is the error of a wait that interrupt ended.
var ErrInterrupted = errors.New("interrupted")

// Take takes a lock through lock, which opens the lock file and flocks it: lock(false)
// without waiting (an error matching unix.EWOULDBLOCK while another process holds
// it), lock(true) waiting. While the lock is held elsewhere, waiting (nil: none) is
// called once and Take waits until lock(true) returns, ctx ends (its cause is
// returned) or interrupt yields (ErrInterrupted); a lock that comes after Take gave
// up is released.
func Take[T any](ctx context.Context, lock func(wait bool) (*os.File, error), waiting func(), interrupt <-chan T) (*os.File, error) {
	f, err := lock(false)
	if err == nil || !errors.Is(err, unix.EWOULDBLOCK) {
		return f, err
	}
	if waiting != nil {
		waiting()
	}
	type res struct {
		f   *os.File
		err error
	}
	got := make(chan res, 1)
	go func() {
		f, err := lock(true)
		got <- res{f, err}
	}()
	abandon := func() {
		go func() {
			if r := <-got; r.f != nil {
				r.f.Close()
			}
		}()
	}
	select {
	case r := <-got:
		return r.f, r.err
	case <-ctx.Done():
		abandon()
		return nil, context.Cause(ctx)
	case <-interrupt:
		abandon()
		return nil, ErrInterrupted
	}
}
