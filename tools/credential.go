package tools

import "github.com/devsandbox/devsandbox/tools/credential"

// Credential reports whether the environment variable name, with value, is to be
// treated as a credential wherever a variable passed by value would be exposed (a
// docker engine reached over plain TCP): a name a tool of r declares as its secret
// (Tool.Secrets, e.g. GH_TOKEN, ANTHROPIC_API_KEY), a name credential.Name judges
// one, or a value credential.Value does. An empty value carries nothing and is
// none. The value is what crosses, not a file's text: a '$' in it is part of it,
// no reference (credential.Literal is for files).
func (r *Registry) Credential(name, value string) bool {
	if value == "" {
		return false
	}
	if r != nil {
		for _, t := range r.tools {
			for _, s := range t.Secrets {
				if s == name {
					return true
				}
			}
		}
	}
	return credential.Name(name) || credential.Value(value)
}
