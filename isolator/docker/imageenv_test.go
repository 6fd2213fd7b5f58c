package docker

import (
	"slices"
	"strings"
	"testing"

	"github.com/devsandbox/devsandbox/egress"
	"github.com/devsandbox/devsandbox/isolator/sandboxinit/wire"
)

// hostileEnv is an image's ENV that would tune devsandbox's own Go programs.
var hostileEnv = []string{"PATH=/image/bin:/usr/bin", "GODEBUG=tlsrsakex=1,tls10server=1", "GOTRACEBACK=crash", "GOMAXPROCS=7", "LANG=image", "EMPTY="}

func TestUnsetImageEnv(t *testing.T) {
	for _, c := range []struct {
		image, env, want []string
	}{
		{nil, nil, []string{}},
		{nil, []string{"A=1"}, []string{"A=1"}},
		{[]string{"GODEBUG=x", "PATH=/i"}, nil, []string{"GODEBUG", "PATH"}},
		{[]string{"GODEBUG=x", "A=image"}, []string{"A=run"}, []string{"A=run", "GODEBUG"}},
		{[]string{"A=image", "B"}, []string{"A"}, []string{"A", "B"}},
	} {
		if got := unsetImageEnv(c.image, c.env); !slices.Equal(got, c.want) {
			t.Errorf("unsetImageEnv(%q, %q) = %q, want %q", c.image, c.env, got, c.want)
		}
	}
	if got, want := imageEnvFor([]string{"A=image", "B=b", "C", "D=d"}, []string{"A=run", "D"}), []string{"B=b"}; !slices.Equal(got, want) {
		t.Errorf("imageEnvFor = %q, want %q", got, want)
	}
}

// The helper containers name every variable of the image to remove it: the companion
// (kept or not) and the firewall helper start with none of the image's ENV.
func TestHelpersTakeNoImageEnv(t *testing.T) {
	want := []string{"PATH", "GODEBUG", "GOTRACEBACK", "GOMAXPROCS", "LANG", "EMPTY"}
	p := basePlan()
	comp, _ := companionConfig(p, "img", hostileEnv, "vol", nil, false)
	kept, _ := keptCompanionConfig(p, "img", hostileEnv, "vol", map[string]string{})
	fw, _ := firewallHelper([]string{"x"}, nil, "target", "img", hostileEnv, nil)
	for name, env := range map[string][]string{"companion": comp.Env, "kept companion": kept.Env, "firewall helper": fw.Env} {
		if !slices.Equal(env, want) {
			t.Errorf("%s: Env %q, want %q (each image variable removed, nothing else)", name, env, want)
		}
	}
	plain, _ := keptCompanionConfig(p, "img", nil, "vol", map[string]string{})
	if plain.Labels[LabelSpec] == kept.Labels[LabelSpec] {
		t.Errorf("the kept companion's spec hash ignores the image's ENV it removes")
	}
	if c, _ := companionConfig(p, "img", nil, "vol", nil, false); c.Env == nil || len(c.Env) != 0 {
		t.Errorf("companion without image ENV: Env %#v, want empty, not nil", c.Env)
	}
}

// The sandbox container removes the image's variables the run does not set, and its
// init's manifest carries them for the command; a kept container's config and its
// session's exec the same.
func TestSandboxTakesImageEnvThroughInit(t *testing.T) {
	for _, keep := range []bool{false, true} {
		p := basePlan()
		p.Egress = egress.Rules{Mode: egress.Open}
		o := opts
		o.Keep, o.ImageEnv = keep, append(slices.Clone(hostileEnv), "HOME=/image-home", wire.ManifestEnv+"=image")
		s, err := containerConfig(p, o)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(s.ImageEnv, o.ImageEnv) {
			t.Errorf("keep=%v: Spec.ImageEnv %q", keep, s.ImageEnv)
		}
		if pathIn(s.Config.Env) != "" {
			t.Errorf("keep=%v: the container's Env %q removes or sets the image's PATH", keep, s.Config.Env)
		}
		for _, k := range []string{"GODEBUG", "GOTRACEBACK", "GOMAXPROCS", "EMPTY"} {
			if !slices.Contains(s.Config.Env, k) {
				t.Errorf("keep=%v: the container's Env %q does not remove the image's %s", keep, s.Config.Env, k)
			}
		}
		for _, kv := range s.Config.Env {
			if strings.HasPrefix(kv, "GODEBUG=") || kv == wire.ManifestEnv || (kv == "HOME" || kv == "LANG") && !keep {
				t.Errorf("keep=%v: the container's Env has %q", keep, kv)
			}
		}
		env := s.Config.Env
		if keep {
			env = s.Exec.Env
		}
		var m *wire.Manifest
		for _, kv := range env {
			if v, ok := strings.CutPrefix(kv, wire.ManifestEnv+"="); ok {
				if m, err = wire.DecodeManifest(v); err != nil {
					t.Fatal(err)
				}
			}
		}
		if m == nil {
			t.Fatalf("keep=%v: no manifest in %q", keep, env)
		}
		// The run sets HOME and LANG (basePlan): the image's are not the command's.
		want := []string{"PATH=/image/bin:/usr/bin", "GODEBUG=tlsrsakex=1,tls10server=1", "GOTRACEBACK=crash", "GOMAXPROCS=7", "EMPTY="}
		if !slices.Equal(m.ImageEnv, want) {
			t.Errorf("keep=%v: the init's ImageEnv %q, want %q", keep, m.ImageEnv, want)
		}
	}
}
