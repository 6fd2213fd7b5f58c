package isolator

import (
	"slices"
	"testing"
)

func TestSubdirFiles(t *testing.T) {
	s := SubdirFiles{Names: []string{"rust-toolchain", ".tool-versions", "mise/config.toml", ".config/mise/config.toml", "mise.*.toml", ".config/mise/conf.d"}}
	if got, want := s.ScanMarks(), []string{".git", "rust-toolchain", ".tool-versions", "config.toml", "mise.*.toml", "conf.d"}; !slices.Equal(got, want) {
		t.Errorf("ScanMarks() = %q, want %q", got, want)
	}
	for p, want := range map[string]bool{
		"/p/sub/rust-toolchain":               true,
		"/p/a/b/c/.tool-versions":             true,
		"/p/sub/mise/config.toml":             true,
		"/p/sub/.config/mise/config.toml":     true,
		"/p/sub/mise.ci.local.toml":           true,
		"/p/sub/.config/mise/conf.d":          true,
		"/p/rust-toolchain":                   false, // the top directory: Tripwires
		"/p/mise/config.toml":                 false,
		"/p/.config/mise/config.toml":         false, // mise/config.toml below .config, but the top's too
		"/p/sub/config.toml":                  false,
		"/p/sub/other/config.toml":            false,
		"/p/sub/mise.toml.bak":                false,
		"/p/sub/rust-toolchain/x":             false,
		"/q/sub/rust-toolchain":               false, // not in the project
		"/p":                                  false,
		"/psub/rust-toolchain":                false,
		"/p/sub/conf.d":                       false,
		"/p/x/.config/mise/conf.d/extra.toml": false, // conf.d is covered as a whole
	} {
		if got := s.Covers("/p", p); got != want {
			t.Errorf("Covers(%s) = %v, want %v", p, got, want)
		}
	}
}
