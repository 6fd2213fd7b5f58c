package config

import "strings"

// flagLayer is the part of the flags that one flag sets.
type flagLayer struct {
	l   *layer
	src *source
}

// flagLayers turns the flags into one layer per flag, in a fixed order, so that each
// value's origin names its flag. --image is left out: its key depends on the
// effective isolator (see imageLayer). --mount entries are parsed here, since their
// grammar differs from sandbox.host_mounts.
func flagLayers(f Flags, host Host) ([]flagLayer, error) {
	var out []flagLayer
	add := func(name string, l *layer) { out = append(out, flagLayer{l: l, src: flagSource("flag " + name)}) }
	if f.Isolator != nil {
		add("--isolator", &layer{Isolator: f.Isolator})
	}
	if f.Mode != nil {
		add("--mode", &layer{Sandbox: layerSandbox{Mode: f.Mode}})
	}
	if f.ReadOnly != nil {
		add("--read-only", &layer{Sandbox: layerSandbox{ReadOnly: f.ReadOnly}})
	}
	if len(f.Mounts) > 0 {
		src := flagSource("flag --mount")
		var mounts []Mount
		for _, s := range f.Mounts {
			m, err := parseMount(s, host.Home, true)
			if err != nil {
				return nil, src.fail("sandbox.host_mounts", -1, err)
			}
			mounts = append(mounts, m)
		}
		out = append(out, flagLayer{l: &layer{Sandbox: layerSandbox{mounts: mounts}}, src: src})
	}
	if len(f.Env) > 0 {
		l := &layer{}
		for _, e := range f.Env {
			if name, value, ok := strings.Cut(e, "="); ok {
				if l.Env.Set == nil {
					l.Env.Set = map[string]string{}
				}
				l.Env.Set[name] = value
			} else {
				l.Secrets.Env = append(l.Secrets.Env, e)
			}
		}
		add("--env", l)
	}
	if len(f.SecretFiles) > 0 {
		src := flagSource("flag --secret-file")
		files := map[string]string{}
		for _, s := range f.SecretFiles {
			name, p, ok := strings.Cut(s, "=")
			if !ok || name == "" || p == "" {
				return nil, src.fail("secrets.files", -1, invalidf("%q is not NAME=PATH", s))
			}
			files[name] = p
		}
		out = append(out, flagLayer{l: &layer{Secrets: layerSecrets{Files: files}}, src: src})
	}
	if f.Egress != nil {
		add("--egress", &layer{Egress: layerEgress{Mode: f.Egress}})
	}
	if len(f.Allow) > 0 {
		add("--allow", &layer{Egress: layerEgress{Allow: append([]string(nil), f.Allow...)}})
	}
	if len(f.Publish) > 0 {
		add("--publish", &layer{Egress: layerEgress{Publish: append([]string(nil), f.Publish...)}})
	}
	if f.KeepContainer != nil {
		add("--keep-container", &layer{Docker: layerDocker{KeepContainer: f.KeepContainer}})
	}
	if f.Pids != nil {
		add("--pids", &layer{Limits: layerLimits{Pids: f.Pids}})
	}
	if f.Memory != nil {
		add("--memory", &layer{Limits: layerLimits{Memory: f.Memory}})
	}
	if f.CPUs != nil {
		add("--cpus", &layer{Limits: layerLimits{CPUs: f.CPUs}})
	}
	return out, nil
}

// imageLayer applies --image to the image of the effective isolator: krun.image for
// krun, docker.image otherwise (auto may fall back to docker).
func imageLayer(image *string, isolator string) flagLayer {
	l := &layer{}
	if isolator == "krun" {
		l.Krun.Image = image
	} else {
		l.Docker.Image = image
	}
	return flagLayer{l: l, src: flagSource("flag --image")}
}
