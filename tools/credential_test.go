package tools

import "testing"

// A name a tool declares as its secret is a credential whatever its words
// (COPILOT_GITHUB_TOKEN has them; a tool's own secret need not).
func TestRegistryCredential(t *testing.T) {
	r := NewRegistry(Tool{Name: "t", Secrets: []string{"ODD_NAME"}})
	for _, tc := range []struct {
		name, value string
		want        bool
	}{
		{"ODD_NAME", "x", true},
		{"OTHER", "x", false},
		{"OTHER", "ghp_0123456789abcdefXYZ", true},
		{"API_TOKEN", "x", true},
	} {
		if got := r.Credential(tc.name, tc.value); got != tc.want {
			t.Errorf("Credential(%s): %v, want %v", tc.name, got, tc.want)
		}
	}
	for _, tool := range Default().Tools() {
		for _, s := range tool.Secrets {
			if !Default().Credential(s, "") {
				t.Errorf("tool %s's secret %s: not a credential", tool.Name, s)
			}
		}
	}
}
