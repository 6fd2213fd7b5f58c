package isolator_test

import (
	"fmt"

	"github.com/devsandbox/devsandbox/isolator"
	krun "github.com/devsandbox/devsandbox/isolator/krun/helper"
)

// An agent harness applies the sandbox's view to the file tools it runs in its own
// process: what the agent may write, by the path it named. The view is the isolator's
// that runs the Plan (here krun's, whose container has its image's /etc).
func ExampleViewOf() {
	const home, project = "/home/u", "/home/u/src/app"
	sandboxHome := "/home/u/.local/share/devsandbox/app-0123abcd/home"
	p := &isolator.Plan{ // in a harness: from planner.Build
		Project:     isolator.Project{Dir: project},
		User:        isolator.User{Name: "u", HostHome: home},
		SandboxHome: sandboxHome,
		Mounts: []isolator.Mount{
			{Kind: isolator.Bind, Source: sandboxHome, Dest: home, Why: "sandbox home"},
			{Kind: isolator.Bind, Source: project, Dest: project, Why: "project"},
			{Kind: isolator.MaskDir, HomeRel: ".ssh", Why: "sandbox.hide_paths"},
			{Kind: isolator.Bind, Source: project + "/.git/hooks", Dest: project + "/.git/hooks", ReadOnly: true, Why: "git hooks"},
			{Kind: isolator.MaskFile, Dest: project + "/.env", Why: "sandbox.mask_files"},
		},
		Tmp: isolator.Tmp{Kind: "tmpfs"},
	}
	iso := krun.Stub(krun.Settings{Home: home}, nil, nil) // the isolator the harness runs p with
	view, err := isolator.ViewOf(iso, p)                  // before iso.Run(ctx, p, stdio)
	if err != nil {
		fmt.Println(err)
		return
	}

	// A file tool opens with view.Open(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC,
	// 0o644), which checks and opens in one step while the sandbox runs. CheckWrite
	// gives the same answer by name, without opening: here, the policy for each path.
	writeFile := func(name string, data []byte) error {
		if err := view.CheckWrite(name); err != nil {
			return err
		}
		fmt.Printf("may write %d bytes to %s\n", len(data), name)
		return nil
	}
	for _, name := range []string{
		project + "/main.go",
		home + "/notes.md",
		project + "/.git/hooks/pre-commit",
		project + "/../app/.env",
		home + "/.ssh/authorized_keys",
		"/etc/profile",
		"/tmp/scratch",
	} {
		if err := writeFile(name, []byte("x")); err != nil {
			fmt.Println("refused:", err)
		}
	}
	// Output:
	// may write 1 bytes to /home/u/src/app/main.go
	// may write 1 bytes to /home/u/notes.md
	// refused: /home/u/src/app/.git/hooks/pre-commit: read-only in the sandbox view (git hooks)
	// refused: /home/u/src/app/.env: masked in the sandbox view (sandbox.mask_files)
	// refused: /home/u/.ssh/authorized_keys: masked in the sandbox view (sandbox.hide_paths)
	// refused: /etc/profile: not visible in the sandbox view
	// may write 1 bytes to /tmp/scratch
}
