package docker

import "github.com/devsandbox/devsandbox/isolator/tty"

func isTerminal(fd uintptr) bool { return tty.IsTerminal(fd) }

func makeRaw(fd uintptr) (func() error, error) { return tty.MakeRaw(fd) }

func termSize(fd uintptr) (rows, cols uint16, err error) {
	s, err := tty.GetSize(fd)
	return s.Rows, s.Cols, err
}
