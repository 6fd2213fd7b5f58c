package tools

import (
	"fmt"
	"maps"
	"slices"
	"strings"
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
// Which provider and profile a run uses (flags) cannot be known ahead, so every one
// the files declare counts. devsandbox takes both OPENAI_API_KEY and CODEX_API_KEY
// as Codex's OpenAI login.

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
	eps, err := codexLayer(base, nil, file, env, &warns)
	if err != nil {
		return nil, warns, err
	}
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
			}
		}
		if err != nil {
			warns = append(warns, fmt.Sprintf("%v; Codex's profile %s is not followed", err, strings.TrimSuffix(n, ".config.toml")))
		}
	}
	return eps, warns, nil
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
