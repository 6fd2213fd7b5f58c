//go:build !linux

package main

import (
	"errors"
	"os/exec"
)

func onTerminal(*exec.Cmd, ttyShape) (func(), error) { return nil, errors.New("-tty needs Linux") }
