package bwrap_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"

	"github.com/devsandbox/devsandbox/config"
	"github.com/devsandbox/devsandbox/isolator/bwrap"
	"github.com/devsandbox/devsandbox/isolator/planner"
	"github.com/devsandbox/devsandbox/tools"
)

// An agent harness runs its own tool subprocesses in the same sandbox view it gives the
// agent, and checks in-process file tools against the same view.
func ExampleWrapArgv() {
	cwd, _ := os.Getwd()
	cfg, _, err := config.Load(config.LoadOptions{ProjectDir: cwd, UID: -1, GID: -1})
	if err != nil {
		fmt.Println(err)
		return
	}
	p, _, err := planner.Build(cfg, tools.Default(), planner.OS(cwd), planner.Request{})
	if err != nil {
		fmt.Println(err)
		return
	}
	p.Egress.Mode = "none" // the harness runs no proxy of its own
	// The session makes the host directories, marks the project in use (prune keeps
	// it) and watches what the commands write to git metadata and tripwires;
	// WrapArgv and Command refuse without one.
	s, err := bwrap.Begin(context.Background(), p, func(s string) { fmt.Println("warning:", s) })
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.End() // after the command exits: the last check, the mark released
	// The file tools' view, made before the first command: it knows the files the
	// masks and read-only binds hold wherever a command later moves them.
	view := s.View()
	argv, err := bwrap.WrapArgv(p, []string{"go", "test", "./..."})
	if err != nil { // e.g. the ssh tool's generated config needs bwrap.Command
		fmt.Println(err)
		return
	}
	env, _ := bwrap.Env(p)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env, cmd.Dir = env, p.Workdir
	_ = cmd.Run()

	// File tools open through the view: check and open are one step.
	f, err := view.Open(p.Project.Dir+"/.git/hooks/pre-commit", os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o755)
	if err != nil {
		fmt.Println("refused:", err)
		return
	}
	f.Close()
}
