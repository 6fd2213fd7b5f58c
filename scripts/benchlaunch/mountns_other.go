//go:build !linux

package main

import "errors"

var errNoMountNS = errors.New("-mounts needs Linux")

func reexecInMountNS([]string) error { return errNoMountNS }

func setupMounts(int, bool) (int, func(), error) { return 0, nil, errNoMountNS }
