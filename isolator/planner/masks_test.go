package planner

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/devsandbox/devsandbox/config"
	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/tools"
)

// maskTree builds a project with files that mask_files does and does not reach.
func maskTree(t *testing.T, f *fixture) {
	t.Helper()
	for _, p := range []string{
		".env", ".env.example", "README.md", "sub/.env.local", "sub/deeper/.env.production", "sub/env",
		"node_modules/pkg/.env", ".git/.env", "config/real.secret",
	} {
		writeFile(t, f.proj+"/"+p, "TOKEN=x\n")
	}
	writeFile(t, f.root+"/outside/.env", "TOKEN=x\n")
	mkdirs(t, f.proj+"/sub/.env.d") // a directory with a masked name is entered, not masked
	writeFile(t, f.proj+"/sub/.env.d/inner", "")
	symlink(t, "../config/real.secret", f.proj+"/app/.env")     // into the project: the target is masked
	symlink(t, f.root+"/outside/.env", f.proj+"/ext/.env.prod") // out of the project: ignored
	symlink(t, f.root+"/outside", f.proj+"/linkdir")            // symlinked dir: not followed
	symlink(t, "missing", f.proj+"/dangling/.env")              // dangling: ignored
}

func TestFindMasked(t *testing.T) {
	f := newFixture(t)
	maskTree(t, f)
	m := maskMatcher{mask: []string{".env", ".env.*"}, allow: []string{".env.example"}, skip: []string{".git", "node_modules"}}
	got, err := findMasked(probe(f.proj), f.proj, m)
	if err != nil {
		t.Fatalf("findMasked: %v", err)
	}
	equalLines(t, "masked", got, f.expand(nil,
		"$PROJ/.env",
		"$PROJ/config/real.secret",
		"$PROJ/sub/.env.local",
		"$PROJ/sub/deeper/.env.production",
	))

	// No cache: a file created since the last scan is found by the next one.
	writeFile(t, f.proj+"/zz/.env", "")
	got, err = findMasked(probe(f.proj), f.proj, m)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(got); n != 5 || got[n-1] != f.proj+"/zz/.env" {
		t.Errorf("after creating zz/.env: %q", got)
	}
}

func TestFindMaskedConfig(t *testing.T) {
	for _, tc := range []struct {
		name string
		m    maskMatcher
		want []string
	}{
		{"no allow: .env.example masked too", maskMatcher{mask: []string{".env", ".env.*"}, skip: []string{".git", "node_modules"}},
			[]string{"$PROJ/.env", "$PROJ/.env.example", "$PROJ/config/real.secret", "$PROJ/sub/.env.local", "$PROJ/sub/deeper/.env.production"}},
		{"allow glob", maskMatcher{mask: []string{".env", ".env.*"}, allow: []string{".env.*"}, skip: []string{".git", "node_modules"}},
			[]string{"$PROJ/.env", "$PROJ/config/real.secret"}},
		{"nothing skipped", maskMatcher{mask: []string{".env"}},
			[]string{"$PROJ/.env", "$PROJ/.git/.env", "$PROJ/config/real.secret", "$PROJ/node_modules/pkg/.env"}},
		{"skip sub", maskMatcher{mask: []string{".env*"}, skip: []string{"sub", ".git", "node_modules"}},
			[]string{"$PROJ/.env", "$PROJ/.env.example", "$PROJ/config/real.secret"}},
		{"no masks", maskMatcher{}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			maskTree(t, f)
			got, err := findMasked(probe(f.proj), f.proj, tc.m)
			if err != nil {
				t.Fatalf("findMasked: %v", err)
			}
			equalLines(t, "masked", got, f.expand(nil, tc.want...))
		})
	}
}

// TestBuildMasks: the project's masked files become MaskFile mounts after the project
// mount, with the configured mask_allow.
func TestBuildMasks(t *testing.T) {
	f := newFixture(t)
	maskTree(t, f)
	cfg := f.load(t)
	cfg.Sandbox.MaskAllow = []string{".env.example"}
	p, _ := f.build(t, cfg)
	equalLines(t, "mounts", mountLines(p.Mounts), f.expand(p, append(baseMounts,
		"bind rw $PROJ -> $PROJ (project)",
		// Mount points, right after the bind they lie in: cannot be moved (anchor.go).
		"bind rw $PROJ/config -> $PROJ/config (holds a masked or protected path)",
		"bind rw $PROJ/sub -> $PROJ/sub (holds a masked or protected path)",
		"bind rw $PROJ/sub/deeper -> $PROJ/sub/deeper (holds a masked or protected path)",
		"bind rw $PROJ/.git -> $PROJ/.git (git dir)", // a mount point: .git cannot be moved away
		"maskdir $PROJ/.git/hooks (git hooks)",       // maskTree's .git has no hooks
		"maskfile $PROJ/.git/config (git config)",    // nor a config: an empty read-only one
		"maskfile $PROJ/.env (sandbox.mask_files)",
		"maskfile $PROJ/config/real.secret (sandbox.mask_files)",
		"maskfile $PROJ/sub/.env.local (sandbox.mask_files)",
		"maskfile $PROJ/sub/deeper/.env.production (sandbox.mask_files)",
	)...))
}

// TestBuildHidePaths: a hide path is masked when the host has it (below the home,
// home-relative, so every isolator masks it in its own home), whatever earlier
// sessions left in the sandbox home, so the view is the same from run to run; a path
// elsewhere is masked when the view shows it.
func TestBuildHidePaths(t *testing.T) {
	f := newFixture(t)
	mkdirs(t, f.home+"/.ssh", f.home+"/.kube")
	writeFile(t, f.home+"/.netrc", "password y\n")
	writeFile(t, f.root+"/sys/secret.txt", "")
	writeFile(t, f.root+"/elsewhere/secret.txt", "")
	cfg := f.load(t)
	p, _ := f.build(t, cfg)
	data := f.expand(p, "$DATA/home")[0]
	mkdirs(t, data+"/.aws", data+"/.config/gcloud") // the sandbox's own: not masked
	cfg.Sandbox.SystemBinds = []string{f.root + "/sys"}
	cfg.Sandbox.HidePaths = append(cfg.Sandbox.HidePaths, f.root+"/sys/secret.txt", f.root+"/elsewhere/secret.txt", f.home+"/.absent")

	p, _ = f.build(t, cfg)
	equalLines(t, "mounts", mountLines(p.Mounts), f.expand(p, append(baseMounts,
		"bind rw $PROJ -> $PROJ (project)",
		"maskdir ~/.ssh (sandbox.hide_paths)",
		"maskdir ~/.kube (sandbox.hide_paths)",
		"maskfile ~/.netrc (sandbox.hide_paths)",
		"maskfile $ROOT/sys/secret.txt (sandbox.hide_paths)",
	)...))
}

// TestBuildHidePathsUnderUserBind: a user bind that exposes a hide path must not undo
// the mask, which therefore has to come after the bind.
func TestBuildHidePathsUnderUserBind(t *testing.T) {
	f := newFixture(t)
	mkdirs(t, f.home+"/.config/gcloud", f.root+"/shared/.secrets")
	cfg := f.load(t)
	cfg.Sandbox.ROBinds = []string{f.home + "/.config", f.root + "/shared"}
	cfg.Sandbox.HidePaths = []string{f.home + "/.config/gcloud", f.root + "/shared/.secrets"}
	p, _ := f.build(t, cfg)
	equalLines(t, "mounts", mountLines(p.Mounts), f.expand(p, append(baseMounts,
		"bind rw $PROJ -> $PROJ (project)",
		"bind ro $HOME/.config -> $HOME/.config (sandbox.ro_binds)",
		"bind ro $ROOT/shared -> $ROOT/shared (sandbox.ro_binds)",
		"maskdir ~/.config/gcloud (sandbox.hide_paths)",
		// Where the sandbox's home is not the host home's path (a container's), the
		// bind shows ~/.config at its host path too: masked there as well.
		"maskdir $HOME/.config/gcloud (sandbox.hide_paths (at its host path))",
		"maskdir $ROOT/shared/.secrets (sandbox.hide_paths)",
	)...))
}

// TestHostExecutedFilesReadOnly: project files that tools on the host run (agent hook
// settings, a husky hooks dir named by core.hooksPath) are read-only like .git/hooks.
func TestHostExecutedFilesReadOnly(t *testing.T) {
	f := newFixture(t)
	gitRepo(t, f.proj)
	writeFile(t, f.proj+"/.git/config", "[core]\n\thooksPath = .husky\n")
	mkdirs(t, f.proj+"/.husky")
	writeFile(t, f.proj+"/.claude/settings.json", "{}")
	writeFile(t, f.proj+"/.mcp.json", "{}")
	writeFile(t, f.proj+"/CLAUDE.local.md", "be nice")
	writeFile(t, f.proj+"/CLAUDE.md", "in git: not listed")
	writeFile(t, f.proj+"/rust-toolchain.toml", "[toolchain]\npath = \"/opt/evil\"\n")
	writeFile(t, f.proj+"/.config/mise/config.toml", "[env]\n")
	writeFile(t, f.proj+"/.config/mise/config.ci.local.toml", "[env]\n") // a MISE_ENV profile
	writeFile(t, f.proj+"/mise.production.toml", "[env]\n")
	writeFile(t, f.proj+"/.rtx.toml", "[env]\n")
	writeFile(t, f.proj+"/mise.toml.orig", "[env]\n") // read by no mise: not listed
	writeFile(t, f.proj+"/.idea/workspace.xml", "<project/>")
	writeFile(t, f.proj+"/.nvmrc", "22\n") // names a version only: not listed
	p, _ := f.build(t, f.load(t))
	var got []string
	for _, l := range mountLines(p.Mounts) {
		if strings.Contains(l, "run by tools on the host)") || strings.Contains(l, "(git core.hooksPath)") {
			got = append(got, l)
		}
	}
	equalLines(t, "mounts", got, f.expand(p,
		"bind rw $PROJ/.claude -> $PROJ/.claude (holds files run by tools on the host)",
		"bind rw $PROJ/.config/mise -> $PROJ/.config/mise (holds files run by tools on the host)",
		"bind ro $PROJ/.claude/settings.json -> $PROJ/.claude/settings.json (run by tools on the host)",
		"bind ro $PROJ/.mcp.json -> $PROJ/.mcp.json (run by tools on the host)",
		"bind ro $PROJ/CLAUDE.local.md -> $PROJ/CLAUDE.local.md (run by tools on the host)",
		"bind ro $PROJ/rust-toolchain.toml -> $PROJ/rust-toolchain.toml (run by tools on the host)",
		"bind ro $PROJ/.config/mise/config.toml -> $PROJ/.config/mise/config.toml (run by tools on the host)",
		"bind ro $PROJ/.rtx.toml -> $PROJ/.rtx.toml (run by tools on the host)",
		"bind ro $PROJ/mise.production.toml -> $PROJ/mise.production.toml (run by tools on the host)",
		"bind ro $PROJ/.config/mise/config.ci.local.toml -> $PROJ/.config/mise/config.ci.local.toml (run by tools on the host)",
		"bind ro $PROJ/.idea -> $PROJ/.idea (run by tools on the host)",
		"bind ro $PROJ/.husky -> $PROJ/.husky (git core.hooksPath)",
	))
}

// TestHuskyScriptsReadOnly: husky 9 sets core.hooksPath to .husky/_, whose hooks
// source its `h`, which runs .husky/<hook>, one level up: that directory is read-only
// too (before, the sandbox rewrote .husky/pre-commit and the host's next commit ran
// it). A hooks directory named _ without husky's h, or one whose parent is the
// project, leaves its parent as it was.
func TestHuskyScriptsReadOnly(t *testing.T) {
	for _, tc := range []struct {
		name, hooksPath string
		h               bool
		want            []string
	}{
		{"husky 9", ".husky/_", true, []string{
			"bind ro $PROJ/.husky -> $PROJ/.husky (husky's hook scripts (git core.hooksPath is its _ directory))",
			"bind ro $PROJ/.husky/_ -> $PROJ/.husky/_ (git core.hooksPath)",
		}},
		{"no h", ".husky/_", false, []string{"bind ro $PROJ/.husky/_ -> $PROJ/.husky/_ (git core.hooksPath)"}},
		{"at the top", "_", true, []string{"bind ro $PROJ/_ -> $PROJ/_ (git core.hooksPath)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			gitRepo(t, f.proj)
			writeFile(t, f.proj+"/.git/config", "[core]\n\thooksPath = "+tc.hooksPath+"\n")
			mkdirs(t, f.proj+"/"+tc.hooksPath)
			if tc.h {
				writeFile(t, f.proj+"/"+tc.hooksPath+"/h", "#!/usr/bin/env sh\n")
			}
			p, _ := f.build(t, f.load(t))
			var got []string
			for _, l := range mountLines(p.Mounts) {
				if strings.Contains(l, "core.hooksPath") {
					got = append(got, l)
				}
			}
			equalLines(t, "mounts", got, f.expand(p, tc.want...))
		})
	}
}

// TestLefthookRemotesReadOnly: lefthook's clones of its remotes' repositories
// (.git/info/lefthook-remotes), whose configs the host's next commit runs, are
// read-only with .git/info a mount point; absent, a quarantining tripwire; a symlink
// there stops the run. On s28 there was neither mount nor tripwire.
func TestLefthookRemotesReadOnly(t *testing.T) {
	lines := func(p *isolator.Plan) (mounts, trips []string) {
		for _, l := range mountLines(p.Mounts) {
			if strings.Contains(l, "lefthook") {
				mounts = append(mounts, l)
			}
		}
		for _, w := range p.Tripwires {
			if strings.Contains(w.Path, "lefthook-remotes") {
				trips = append(trips, fmt.Sprintf("%s quarantine=%v", w.Path, w.Quarantine))
			}
		}
		return mounts, trips
	}
	t.Run("present", func(t *testing.T) {
		f := newFixture(t)
		gitRepo(t, f.proj)
		writeFile(t, f.proj+"/.git/info/lefthook-remotes/shared/lefthook.yml", "pre-commit: {}\n")
		p, _ := f.build(t, f.load(t))
		mounts, trips := lines(p)
		equalLines(t, "mounts", mounts, f.expand(p,
			"bind rw $PROJ/.git/info -> $PROJ/.git/info (holds lefthook's remote configs)",
			"bind ro $PROJ/.git/info/lefthook-remotes -> $PROJ/.git/info/lefthook-remotes (lefthook's remote configs)"))
		equalLines(t, "tripwires", trips, nil)
	})
	t.Run("absent", func(t *testing.T) {
		f := newFixture(t)
		gitRepo(t, f.proj)
		p, _ := f.build(t, f.load(t))
		mounts, trips := lines(p)
		equalLines(t, "mounts", mounts, nil)
		equalLines(t, "tripwires", trips, f.expand(p, "$PROJ/.git/info/lefthook-remotes quarantine=true"))
	})
	// lefthook run inside a submodule, or a nested one, keeps its remotes in that
	// submodule's git dir.
	t.Run("submodules", func(t *testing.T) {
		f := newFixture(t)
		gitRepo(t, f.proj)
		writeFile(t, f.proj+"/.git/modules/sub/HEAD", "ref: refs/heads/main\n")
		writeFile(t, f.proj+"/.git/modules/sub/info/lefthook-remotes/shared/lefthook.yml", "pre-commit: {}\n")
		writeFile(t, f.proj+"/.git/modules/sub/modules/nested/HEAD", "ref: refs/heads/main\n")
		p, _ := f.build(t, f.load(t))
		mounts, trips := lines(p)
		// lines keeps the mounts naming lefthook: the git dirs' own binds are
		// TestGitMounts'.
		equalLines(t, "mounts", mounts, f.expand(p,
			"bind rw $PROJ/.git/modules/sub/info -> $PROJ/.git/modules/sub/info (holds lefthook's remote configs)",
			"bind ro $PROJ/.git/modules/sub/info/lefthook-remotes -> $PROJ/.git/modules/sub/info/lefthook-remotes (lefthook's remote configs)"))
		equalLines(t, "tripwires", trips, f.expand(p,
			"$PROJ/.git/info/lefthook-remotes quarantine=true",
			"$PROJ/.git/modules/sub/modules/nested/info/lefthook-remotes quarantine=true"))
	})
	t.Run("submodule symlink", func(t *testing.T) {
		f := newFixture(t)
		gitRepo(t, f.proj)
		writeFile(t, f.proj+"/.git/modules/sub/HEAD", "ref: refs/heads/main\n")
		mkdirs(t, f.proj+"/.git/modules/sub/info", f.proj+"/elsewhere")
		if err := os.Symlink("../../../../elsewhere", f.proj+"/.git/modules/sub/info/lefthook-remotes"); err != nil {
			t.Fatal(err)
		}
		_, _, err := Build(f.load(t), tools.NewRegistry(), probe(f.proj), Request{Command: []string{"true"}})
		if !errors.Is(err, ErrProject) || !strings.Contains(err.Error(), "modules/sub/info/lefthook-remotes is a symlink") {
			t.Fatalf("a symlink at .git/modules/sub/info/lefthook-remotes: want ErrProject naming it, got %v", err)
		}
	})
	t.Run("symlink", func(t *testing.T) {
		f := newFixture(t)
		gitRepo(t, f.proj)
		mkdirs(t, f.proj+"/.git/info", f.proj+"/elsewhere")
		if err := os.Symlink("../../elsewhere", f.proj+"/.git/info/lefthook-remotes"); err != nil {
			t.Fatal(err)
		}
		_, _, err := Build(f.load(t), tools.NewRegistry(), probe(f.proj), Request{Command: []string{"true"}})
		if !errors.Is(err, ErrProject) || !strings.Contains(err.Error(), "lefthook-remotes is a symlink") {
			t.Fatalf("a symlink at .git/info/lefthook-remotes: want ErrProject naming it, got %v", err)
		}
	})
}

// TestHideMaskStableWithToolBelow: with no ~/.ssh on the host, the ssh tool's generated
// config still shows alone in a masked ~/.ssh, and a second build (after the first
// run left ~/.ssh in the sandbox home) renders the same view: a kept container is not
// recreated for nothing.
func TestHideMaskStableWithToolBelow(t *testing.T) {
	f := newFixture(t)
	cfg := f.load(t)
	on := true
	cfg.Tools["ssh"] = config.ToolConfig{Enabled: &on}
	build := func() []string {
		p, _, err := Build(cfg, tools.NewRegistry(tools.SSH()), probe(f.proj), Request{Command: []string{"true"}})
		if err != nil {
			t.Fatal(err)
		}
		var ssh []string
		for _, l := range mountLines(p.Mounts) {
			if strings.Contains(l, ".ssh") {
				ssh = append(ssh, l)
			}
		}
		return ssh
	}
	first := build()
	if len(first) < 2 || !strings.HasPrefix(first[0], "maskdir ~/.ssh") {
		t.Fatalf("ssh mounts: %q; want the mask of ~/.ssh before the generated config", first)
	}
	mkdirs(t, f.home+"/.local/share/devsandbox") // state of an earlier run
	if second := build(); !reflect.DeepEqual(first, second) {
		t.Fatalf("second build differs:\n%q\n%q", first, second)
	}
}

// A masked file with another link is refused, naming the other link.
func TestMaskedFileWithLinks(t *testing.T) {
	f := newFixture(t)
	writeFile(t, f.proj+"/.cache/x", "")
	if err := os.Link(f.proj+"/.cache/x", f.proj+"/.env"); err != nil {
		t.Fatal(err)
	}
	_, _, err := f.tryBuild(f.load(t))
	if !errors.Is(err, isolator.ErrProtection) || !strings.Contains(err.Error(), f.proj+"/.cache/x") {
		t.Fatalf("Build: %v", err)
	}
	if err := os.Remove(f.proj + "/.cache/x"); err != nil {
		t.Fatal(err)
	}
	f.build(t, f.load(t)) // one link again: a mask
}

// TestSubdirExecutedFilesReadOnly: the toolchain, version and mise files the project
// scan finds below sub-directories are read-only like the top directory's, with each
// directory on the way anchored so that none can be renamed away; a symlink's target
// in the project is protected instead. Skipped directories and names in another place
// are not; the top directory's are protectProject's.
func TestSubdirExecutedFilesReadOnly(t *testing.T) {
	f := newFixture(t)
	gitRepo(t, f.proj)
	writeFile(t, f.proj+"/crates/a/rust-toolchain.toml", "[toolchain]\npath = \"evil\"\n")
	writeFile(t, f.proj+"/web/app/.config/mise/config.toml", "[env]\n")
	writeFile(t, f.proj+"/web/app/mise.ci.toml", "[env]\n")
	writeFile(t, f.proj+"/web/versions", "nodejs 22\n")
	if err := os.Symlink("versions", f.proj+"/web/.tool-versions"); err != nil {
		t.Fatal(err)
	}
	writeFile(t, f.proj+"/node_modules/x/.tool-versions", "nodejs 22\n") // skipped
	writeFile(t, f.proj+"/docs/config.toml", "")                         // no tool's
	writeFile(t, f.proj+"/mise.toml", "[env]\n")                         // the top's
	p, _ := f.build(t, f.load(t))
	var got []string
	for _, l := range mountLines(p.Mounts) {
		if strings.Contains(l, "$PROJ/") || strings.Contains(l, f.proj+"/") {
			got = append(got, l)
		}
	}
	// The anchors follow the project's bind, which they are seen through.
	equalLines(t, "mounts", got, f.expand(p,
		"bind rw $PROJ/crates -> $PROJ/crates (holds a masked or protected path)",
		"bind rw $PROJ/crates/a -> $PROJ/crates/a (holds a masked or protected path)",
		"bind rw $PROJ/web -> $PROJ/web (holds a masked or protected path)",
		"bind rw $PROJ/web/app -> $PROJ/web/app (holds a masked or protected path)",
		"bind rw $PROJ/web/app/.config -> $PROJ/web/app/.config (holds a masked or protected path)",
		"bind rw $PROJ/web/app/.config/mise -> $PROJ/web/app/.config/mise (holds a masked or protected path)",
		"bind rw $PROJ/.git -> $PROJ/.git (git dir)",
		"bind ro $PROJ/.git/hooks -> $PROJ/.git/hooks (git hooks)",
		"bind ro $PROJ/.git/config -> $PROJ/.git/config (git config)",
		"bind ro $PROJ/mise.toml -> $PROJ/mise.toml (run by tools on the host)",
		"bind ro $PROJ/crates/a/rust-toolchain.toml -> $PROJ/crates/a/rust-toolchain.toml (run by tools on the host)",
		"bind ro $PROJ/web/versions -> $PROJ/web/versions (run by tools on the host)",
		"bind ro $PROJ/web/app/.config/mise/config.toml -> $PROJ/web/app/.config/mise/config.toml (run by tools on the host)",
		"bind ro $PROJ/web/app/mise.ci.toml -> $PROJ/web/app/mise.ci.toml (run by tools on the host)",
	))
	want := []string{f.proj + "/crates/a/rust-toolchain.toml", f.proj + "/web/.tool-versions", f.proj + "/web/app/.config/mise/config.toml", f.proj + "/web/app/mise.ci.toml"}
	if !reflect.DeepEqual(p.Subdir.Present, want) {
		t.Errorf("Subdir.Present = %q, want %q", p.Subdir.Present, want)
	}
}

// The scan marks of the sub-directory names, which BenchmarkScan200k's
// full-walk-tool-marks copies.
func TestSubdirScanMarks(t *testing.T) {
	got := isolator.SubdirFiles{Names: subdirExecuted}.ScanMarks()
	want := []string{".git", "rust-toolchain.toml", "rust-toolchain", ".tool-versions", "mise.toml", ".mise.toml", "config.toml",
		"mise.local.toml", "conf.d", ".rtx.toml", "mise.*.toml", ".mise.*.toml", "config.*.toml", ".rtx.*.toml", ".miserc.toml", "miserc.toml", ".yarnrc.yml", ".yarnrc"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ScanMarks() = %q, want %q", got, want)
	}
}
