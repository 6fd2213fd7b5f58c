// Package plantest holds the Plan the container backends' golden tests start from, so
// docker's and krun's renderings of it can be read side by side.
package plantest

import (
	"github.com/devsandbox/devsandbox/egress"
	"github.com/devsandbox/devsandbox/isolator"
)

// Paths of the plan.
const (
	Home        = "/home/u"
	Project     = "/home/u/src/app"
	SandboxHome = "/home/u/.local/share/devsandbox/app-0123abcd/home"
	StateDir    = "/home/u/.local/state/devsandbox/app-0123abcd"
	EmptyFile   = "/home/u/.local/state/devsandbox/empty"
	Init        = "/usr/local/bin/devsandbox-init"
)

// Base is a plan as Build makes it for a project under the home directory.
func Base() *isolator.Plan {
	return &isolator.Plan{
		Project:     isolator.Project{Dir: Project, ID: "0123abcd", Name: "app-0123abcd"},
		Workdir:     Project + "/sub dir",
		User:        isolator.User{Name: "u", UID: 1000, GID: 1000, HostHome: Home, Shell: "/bin/bash"},
		SandboxHome: SandboxHome,
		StateDir:    StateDir,
		EmptyFile:   EmptyFile,
		Self:        Init,
		Mounts: []isolator.Mount{
			{Kind: isolator.Bind, Source: SandboxHome, Dest: Home, Why: "sandbox home"},
			{Kind: isolator.Bind, Source: Project, Dest: Project, Why: "project"},
			{Kind: isolator.Bind, Source: Project + "/.git/hooks", Dest: Project + "/.git/hooks", ReadOnly: true, Why: "git hooks"},
		},
		Tmp: isolator.Tmp{Kind: "session", Dir: StateDir + "/tmp"},
		Env: []isolator.EnvVar{
			{Name: "DEVSANDBOX", Value: "1"},
			{Name: "HOME", Value: Home, FromHost: true},
			{Name: "LANG", Value: "C.UTF-8", FromHost: true},
			{Name: "PATH", Value: "/usr/bin:/bin", FromHost: true},
		},
		Egress:  egress.Rules{Mode: egress.None},
		Command: []string{"bash", "-lc", "echo 'hi there'"},
	}
}
