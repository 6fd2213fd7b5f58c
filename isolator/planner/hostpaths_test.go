package planner

import (
	"slices"
	"testing"

	"github.com/devsandbox/devsandbox/config"
	"github.com/devsandbox/devsandbox/isolator"
)

// TestAtBothHomes: a mount below the home is repeated, right after it, at its other
// place when the mounts before it place anything there: a home-relative one at its
// host path, one at a host path in the sandbox home (not for the sandbox home itself).
func TestAtBothHomes(t *testing.T) {
	const home, sbHome = "/h/u", "/h/u/.local/share/devsandbox/app/home"
	sandboxHome := isolator.Mount{Kind: isolator.Bind, Source: sbHome, Dest: home, Why: "sandbox home"}
	project := isolator.Mount{Kind: isolator.Bind, Source: home + "/src/app", Dest: home + "/src/app", Why: "project"}
	bind := func(src, dst string, ro bool, why string) isolator.Mount {
		return isolator.Mount{Kind: isolator.Bind, Source: src, Dest: dst, ReadOnly: ro, Why: why}
	}
	for _, tc := range []struct {
		name string
		in   []isolator.Mount
		want []string
	}{
		{"a hidden path the project holds", []isolator.Mount{sandboxHome, project,
			{Kind: isolator.MaskDir, HomeRel: "src/app/conf", Why: "sandbox.hide_paths"},
		}, []string{
			"bind rw " + sbHome + " -> /h/u (sandbox home)",
			"bind rw /h/u/src/app -> /h/u/src/app (project)",
			"maskdir ~/src/app/conf (sandbox.hide_paths)",
			"maskdir /h/u/src/app/conf (sandbox.hide_paths (at its host path))",
		}},
		{"a hidden path no host path shows: in the sandbox home only", []isolator.Mount{sandboxHome, project,
			{Kind: isolator.MaskDir, HomeRel: ".ssh", Why: "sandbox.hide_paths"},
			{Kind: isolator.Data, HomeRel: ".ssh/config", Content: []byte("Host *\n"), Why: "tool ssh"},
		}, []string{
			"bind rw " + sbHome + " -> /h/u (sandbox home)",
			"bind rw /h/u/src/app -> /h/u/src/app (project)",
			"maskdir ~/.ssh (sandbox.hide_paths)",
			"data ~/.ssh/config \"Host *\\n\" (tool ssh)",
		}},
		{"a user's bind above the home", []isolator.Mount{sandboxHome, bind("/h", "/h", true, "sandbox.ro_binds"),
			{Kind: isolator.MaskFile, HomeRel: ".netrc", Why: "sandbox.hide_paths"},
		}, []string{
			"bind rw " + sbHome + " -> /h/u (sandbox home)",
			"bind ro /h -> /h (sandbox.ro_binds)",
			"maskfile ~/.netrc (sandbox.hide_paths)",
			"maskfile /h/u/.netrc (sandbox.hide_paths (at its host path))",
		}},
		{"a host mount into the home, from elsewhere", []isolator.Mount{sandboxHome, bind("/srv/data", "/h/u/data", false, "sandbox.host_mounts"),
			{Kind: isolator.MaskDir, HomeRel: "data/secret", Why: "sandbox.hide_paths"},
		}, []string{
			"bind rw " + sbHome + " -> /h/u (sandbox home)",
			"bind rw /srv/data -> /h/u/data (sandbox.host_mounts)",
			"maskdir ~/data/secret (sandbox.hide_paths)",
			"maskdir /h/u/data/secret (sandbox.hide_paths (at its host path))",
		}},
		{"a bind elsewhere shows nothing below the home", []isolator.Mount{sandboxHome, bind("/srv", "/srv", false, "sandbox.rw_binds"),
			{Kind: isolator.MaskDir, HomeRel: ".aws", Why: "sandbox.hide_paths"},
		}, []string{
			"bind rw " + sbHome + " -> /h/u (sandbox home)",
			"bind rw /srv -> /srv (sandbox.rw_binds)",
			"maskdir ~/.aws (sandbox.hide_paths)",
		}},
		{"a tool's guard over a user's bind of its directory", []isolator.Mount{sandboxHome, bind("/h/u/.claude", "/h/u/.claude", false, "sandbox.rw_binds"),
			{Kind: isolator.Bind, Source: "/h/u/.claude", HomeRel: ".claude", Why: "tool claude"},
			{Kind: isolator.Bind, Source: "/h/u/.claude/settings.json", HomeRel: ".claude/settings.json", ReadOnly: true, Why: "tool claude"},
		}, []string{
			"bind rw " + sbHome + " -> /h/u (sandbox home)",
			"bind rw /h/u/.claude -> /h/u/.claude (sandbox.rw_binds)",
			"bind rw /h/u/.claude -> ~/.claude (tool claude)",
			"bind rw /h/u/.claude -> /h/u/.claude (tool claude (at its host path))",
			"bind ro /h/u/.claude/settings.json -> ~/.claude/settings.json (tool claude)",
			"bind ro /h/u/.claude/settings.json -> /h/u/.claude/settings.json (tool claude (at its host path))",
		}},
		{"a mask at a host path a tool's binding shows in the sandbox home", []isolator.Mount{sandboxHome,
			{Kind: isolator.Bind, Source: "/h/u/.config/gh", HomeRel: ".config/gh", ReadOnly: true, Why: "tool gh"},
			{Kind: isolator.MaskFile, Dest: "/h/u/.config/gh/token", Why: "proxy.credentials value_file"},
			{Kind: isolator.MaskFile, Dest: "/h/u/.colima/docker.sock", Why: "docker socket"},
		}, []string{
			"bind rw " + sbHome + " -> /h/u (sandbox home)",
			"bind ro /h/u/.config/gh -> ~/.config/gh (tool gh)",
			"maskfile /h/u/.config/gh/token (proxy.credentials value_file)",
			"maskfile ~/.config/gh/token (proxy.credentials value_file (in the sandbox home))",
			"maskfile /h/u/.colima/docker.sock (docker socket)",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			equalLines(t, "mounts", mountLines(atBothHomes(tc.in, home, sbHome)), tc.want)
		})
	}
}

// TestBuildHideAtBothHomes: a hidden path below the home that the project or a user's
// bind shows at its host path is masked there as well as in the sandbox home, so a
// container whose home is elsewhere shows it masked at both places (the leak: docker
// and krun showed and wrote it at its host path); where the home is the host home's
// path, the repetition lands on the mask it repeats.
func TestBuildHideAtBothHomes(t *testing.T) {
	f := newFixture(t)
	for _, d := range []string{"/rw/a/secret", "/ro/a/secret", "/hm/a/secret", "/src/app/conf/secret", "/.ssh"} {
		writeFile(t, f.home+d+"/key", "K\n")
	}
	cfg := f.load(t)
	cfg.Sandbox.RWBinds = []string{f.home + "/rw"}
	cfg.Sandbox.ROBinds = []string{f.home + "/ro"}
	cfg.Sandbox.HostMounts = []config.Mount{{Source: f.home + "/hm", Dest: f.home + "/hm"}}
	hidden := []string{f.home + "/rw/a/secret", f.home + "/ro/a/secret", f.home + "/hm/a/secret", f.proj + "/conf/secret", f.home + "/.ssh"}
	cfg.Sandbox.HidePaths = hidden
	p, _ := f.build(t, cfg)
	masks := func(home string) []string {
		var out []string
		for _, m := range isolator.VisibleMounts(p, home) {
			if m.Kind == isolator.MaskDir {
				out = append(out, m.Path)
			}
		}
		slices.Sort(out)
		return out
	}
	const elsewhere = "/home/sandbox"
	var want []string
	for _, h := range hidden {
		want = append(want, elsewhere+h[len(f.home):])
		if h != f.home+"/.ssh" { // no host path shows ~/.ssh: masked in the sandbox home only
			want = append(want, h)
		}
	}
	slices.Sort(want)
	equalLines(t, "masks with the home elsewhere", masks(elsewhere), want)
	equalLines(t, "masks with the home at the host home's path", masks(f.home), slices.Sorted(slices.Values(hidden)))
}

// TestBuildMaskInToolDirAtBothHomes: the other way round, a mask at a host path below
// the home (a proxy.credentials value_file) inside a tool's home-relative binding (the
// Claude Code directory, read-write) is masked in the sandbox home too, where a
// container shows that binding: there it showed the credential the proxy adds.
func TestBuildMaskInToolDirAtBothHomes(t *testing.T) {
	f := newFixture(t)
	writeFile(t, f.home+"/.claude/keys/token", "sk-secret\n")
	writeFile(t, f.home+"/.config/devsandbox/config.toml", f.expand(nil, `[tools.claude]
enabled = true
[proxy]
mitm = true
[[proxy.credentials]]
host = "api.example.test"
header = "Authorization"
value_file = "$HOME/.claude/keys/token"
`)[0])
	cfg := f.load(t)
	p, _ := f.build(t, cfg)
	for _, home := range []string{"/home/sandbox", f.home} {
		var masked []string
		for _, m := range isolator.VisibleMounts(p, home) {
			if m.Kind == isolator.MaskFile {
				masked = append(masked, m.Path)
			}
		}
		if !slices.Contains(masked, home+"/.claude/keys/token") {
			t.Errorf("home %s: the value file in the tool's directory is not masked there; file masks: %q", home, masked)
		}
	}
}
