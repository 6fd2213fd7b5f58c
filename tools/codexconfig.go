package tools

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/pelletier/go-toml/v2"
)

// How Codex (0.171.0; openai/codex codex-rs/config/src/loader and
// codex-rs/model-provider-info) picks where a request goes and which key it carries:
//
//   - Its configuration is $CODEX_HOME/config.toml, with $CODEX_HOME/NAME.config.toml
//     merged over it (tables key by key) when run with --profile NAME; -c flags
//     override both. A top-level `profile = "NAME"` stops Codex at start, and
//     [profiles.NAME] tables are read by nothing; a project's .codex/config.toml may
//     not set openai_base_url, model_provider or model_providers.
//   - The provider is model_provider (default "openai"). The built-in "openai" sends
//     Codex's OpenAI login (CODEX_API_KEY, or the key in auth.json) to
//     openai_base_url, else https://api.openai.com/v1. [model_providers.NAME] adds
//     a provider; one named like a built-in (openai, ollama, lmstudio) stops Codex at
//     start. A provider sends the variable its env_key names, else its
//     experimental_bearer_token, else what its auth command prints, else, with
//     requires_openai_auth = true, Codex's OpenAI login, else nothing; to its
//     base_url, else https://api.openai.com/v1.
//
//   - Under $CODEX_HOME/config.toml lies the system layer, /etc/codex/config.toml;
//     over everything, -c flags included, the managed layer,
//     /etc/codex/managed_config.toml (an administrator's). Both are root's files
//     that no sandbox writes (readTOML refuses one it could).
//
// Which provider and profile a run uses cannot be known ahead, so every one the files
// declare counts, and so does what the -c flags of the run's own command line set
// when it runs codex (Host.Command: devsandbox's argv, never the sandbox's). What
// Codex may take from elsewhere (a codex started by a script or another program, the
// cloud configuration of a ChatGPT workspace) is not followed. devsandbox takes both
// OPENAI_API_KEY and CODEX_API_KEY as Codex's OpenAI login.

// Codex's files outside its home.
const (
	codexSystemConfig  = "/etc/codex/config.toml"
	codexManagedConfig = "/etc/codex/managed_config.toml"
)

// codexBuiltins are the providers Codex defines itself: a table of the user's with
// one of these names stops Codex at start (amazon-bedrock may set aws.profile only,
// and sends no key of ours).
var codexBuiltins = []string{"openai", "ollama", "lmstudio", "amazon-bedrock"}

// codexDefaultBase is where a Codex provider without base_url sends requests.
const codexDefaultBase = "https://api.openai.com/v1"

// codexEndpoints returns every endpoint Codex may send the key in env to on h: the
// built-in provider's (openai_base_url, else the default) and each provider's that
// sends env, in config.toml and in every profile file. A config.toml that cannot be
// used is an error (ErrSetting); a profile file or a provider that cannot be used is a
// warning, and is not followed.
func codexEndpoints(h Host, env string) ([]Endpoint, []string, error) {
	dir := codexHome(h).src
	file := dir + "/config.toml"
	base, err := readTOML(h, file)
	if err != nil {
		return nil, nil, err
	}
	if base == nil {
		base = map[string]any{}
	}
	var warns []string
	// The system layer lies under config.toml: merged, they are the base.
	switch sys, err := readTOML(h, codexSystemConfig); {
	case err != nil:
		warns = append(warns, fmt.Sprintf("%v; it is not followed", err))
	case sys != nil:
		base, file = mergeTOML(sys, base), file+" over "+codexSystemConfig
	}
	// What lies over config.toml and any profile: the run's -c flags, the managed layer.
	type layer struct {
		doc  map[string]any
		from string
	}
	var tops []layer
	cli, ws := codexFlags(h.Command)
	warns = append(warns, ws...)
	if cli != nil {
		tops = append(tops, layer{cli, "the -c flags of the command"})
	}
	switch m, err := readTOML(h, codexManagedConfig); {
	case err != nil:
		warns = append(warns, fmt.Sprintf("%v; it is not followed", err))
	case m != nil:
		tops = append(tops, layer{m, codexManagedConfig})
	}
	eps, err := codexLayer(base, nil, file, env, &warns)
	if err != nil {
		return nil, warns, err
	}
	overs := func(under map[string]any) {
		for _, t := range tops {
			if more, err := codexLayer(under, t.doc, t.from, env, &warns); err == nil {
				eps = append(eps, more...)
			} else {
				warns = append(warns, fmt.Sprintf("%v; it is not followed", err))
			}
		}
	}
	overs(base)
	var names []string
	if h.ReadDir != nil {
		names, _ = h.ReadDir(dir) // no directory: no profiles
	}
	for _, n := range names {
		if !strings.HasSuffix(n, ".config.toml") || n == ".config.toml" {
			continue
		}
		pf := dir + "/" + n
		doc, err := readTOML(h, pf)
		if err == nil && doc != nil {
			var more []Endpoint
			if more, err = codexLayer(base, doc, pf, env, &warns); err == nil {
				eps = append(eps, more...)
				overs(mergeTOML(base, doc))
			}
		}
		if err != nil {
			warns = append(warns, fmt.Sprintf("%v; Codex's profile %s is not followed", err, strings.TrimSuffix(n, ".config.toml")))
		}
	}
	return eps, warns, nil
}

// codexFlags returns what the -c (--config) flags of argv set, when argv runs codex,
// as a layer of Codex's configuration (nil: none), with a warning for each flag that
// cannot be read. Codex takes each as KEY=VALUE: KEY a dotted path, VALUE a TOML
// value, else the string it is (quotes trimmed). It takes them before and after its
// subcommand; what follows "--" is not a flag.
func codexFlags(argv []string) (map[string]any, []string) {
	if len(argv) == 0 || filepath.Base(argv[0]) != "codex" {
		return nil, nil
	}
	var doc map[string]any
	var warns []string
	for i := 1; i < len(argv); i++ {
		a, kv, at := argv[i], "", i
		switch {
		case a == "--":
			return doc, warns
		case a == "-c" || a == "--config":
			if i+1 == len(argv) {
				return doc, warns
			}
			i++
			kv = argv[i]
		case strings.HasPrefix(a, "--config="):
			kv = strings.TrimPrefix(a, "--config=")
		case strings.HasPrefix(a, "-c") && !strings.HasPrefix(a, "--"):
			kv = strings.TrimPrefix(strings.TrimPrefix(a, "-c"), "=")
		default:
			continue
		}
		key, raw, ok := strings.Cut(kv, "=")
		key = strings.TrimSpace(key)
		if !ok || key == "" {
			// Not quoted: whatever it holds may be a secret.
			warns = append(warns, fmt.Sprintf("the -c flag at argument %d of the codex command is not KEY=VALUE; it is not followed", at))
			continue
		}
		raw = strings.TrimSpace(raw)
		var v any = strings.Trim(raw, `"'`)
		parsed := map[string]any{}
		if toml.Unmarshal([]byte("v = "+raw), &parsed) == nil {
			v = parsed["v"]
		}
		if doc == nil {
			doc = map[string]any{}
		}
		setPath(doc, strings.Split(key, "."), v)
	}
	return doc, warns
}

// setPath sets the dotted path in doc to v, making (or replacing with) tables on the
// way, as Codex applies a -c flag.
func setPath(doc map[string]any, path []string, v any) {
	for _, k := range path[:len(path)-1] {
		t, ok := doc[k].(map[string]any)
		if !ok {
			t = map[string]any{}
			doc[k] = t
		}
		doc = t
	}
	doc[path[len(path)-1]] = v
}

// codexLayer returns the endpoints a layer of Codex's configuration sends env to:
// base (config.toml, file) alone when over is nil, else what the profile over (file)
// sets, merged over base. Only what over itself sets is returned for a profile:
// the rest is base's, returned with it.
func codexLayer(base, over map[string]any, file, env string, warns *[]string) ([]Endpoint, error) {
	doc, optional := base, false
	if over != nil {
		doc, optional = over, true
	}
	var eps []Endpoint
	switch v, ok := doc["openai_base_url"]; {
	case !ok && over == nil:
		eps = append(eps, Endpoint{From: "Codex's default"})
	case !ok:
	case isString(v) && v != "":
		eps = append(eps, Endpoint{URL: v.(string), From: "openai_base_url in " + file, Optional: optional})
	case isString(v):
		if over == nil {
			eps = append(eps, Endpoint{From: "Codex's default"})
		}
	default:
		return nil, fmt.Errorf("%w: openai_base_url in %s: it is a %T, not a string", ErrSetting, file, v)
	}
	provs, ok := doc["model_providers"].(map[string]any)
	if _, set := doc["model_providers"]; set && !ok {
		*warns = append(*warns, fmt.Sprintf("model_providers in %s is not a table; Codex's providers there are not followed", file))
	}
	for _, name := range slices.Sorted(maps.Keys(provs)) {
		where := "model_providers." + name + " in " + file
		p, ok := provs[name].(map[string]any)
		if !ok {
			*warns = append(*warns, where+" is not a table; it is not followed")
			continue
		}
		if slices.Contains(codexBuiltins, name) {
			if name != "amazon-bedrock" {
				*warns = append(*warns, where+" reuses the name of a provider built into Codex, which then refuses to start; it is not followed")
			}
			continue
		}
		if over != nil {
			if bp, ok := base["model_providers"].(map[string]any); ok {
				if b, ok := bp[name].(map[string]any); ok {
					p = mergeTOML(b, p)
				}
			}
		}
		if !codexSends(p, env) {
			continue
		}
		u, ok := p["base_url"]
		switch {
		case !ok:
			eps = append(eps, Endpoint{URL: codexDefaultBase, From: where + " (no base_url)", Optional: true})
		case isString(u):
			eps = append(eps, Endpoint{URL: u.(string), From: where, Optional: true})
		default:
			*warns = append(*warns, fmt.Sprintf("%s: base_url is a %T, not a string; it is not followed", where, u))
		}
	}
	return eps, nil
}

// codexSends reports whether the Codex provider p sends the key in env: it names env
// as its env_key, or has no key of its own and uses Codex's OpenAI login
// (requires_openai_auth = true), which env is.
func codexSends(p map[string]any, env string) bool {
	if k, ok := p["env_key"]; ok {
		return k == env
	}
	if _, ok := p["experimental_bearer_token"]; ok {
		return false
	}
	if _, ok := p["auth"]; ok {
		return false
	}
	return p["requires_openai_auth"] == true
}

// mergeTOML returns over merged into base as Codex merges its layers: tables key by
// key, anything else replaced.
func mergeTOML(base, over map[string]any) map[string]any {
	out := maps.Clone(base)
	for k, v := range over {
		b, bok := out[k].(map[string]any)
		o, ook := v.(map[string]any)
		if bok && ook {
			out[k] = mergeTOML(b, o)
		} else {
			out[k] = v
		}
	}
	return out
}

func isString(v any) bool {
	_, ok := v.(string)
	return ok
}
