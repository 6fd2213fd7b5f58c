package gitconfig

import (
	"slices"
	"strings"
)

// Credentials returns the keys of the variables of es that hold what judge (the
// caller's judgement of a name with its value) takes for a credential, in order,
// each once: a variable judged by its name and value (remote.origin.url holding
// https://user:token@host, github.token); an http.extraHeader judged as the header
// it is, by the header's name and value ("Authorization: Basic …"); a subsection
// judged as a value (url.https://user:token@host/.insteadOf), whose key then names
// it "<…>". A key never holds what was taken for a credential.
func Credentials(es []Entry, judge func(name, value string) bool) []string {
	var out []string
	add := func(k string) {
		if !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	for _, e := range es {
		if e.Sub != "" && judge("", e.Sub) {
			add(e.Section + ".<…>." + e.Name)
			continue
		}
		if e.Bool || e.Value == "" {
			continue
		}
		if judge(e.Name, e.Value) {
			add(e.Key())
			continue
		}
		if e.Section == "http" && e.Name == "extraheader" {
			if h, v, ok := strings.Cut(e.Value, ":"); ok && judge(strings.TrimSpace(h), strings.TrimSpace(v)) {
				add(e.Key())
			}
		}
	}
	return out
}
