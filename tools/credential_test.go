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
		// an empty variable carries nothing; a variable's value is what crosses, so
		// a '$' in it is its text, not a reference.
		{"API_TOKEN", "", false},
		{"ODD_NAME", "", false},
		{"DB_PASSWORD", "$DB_PASSWORD", true},
		{"BUILD_NOTE", "https://h/x?private_token=opaque", true},
	} {
		if got := r.Credential(tc.name, tc.value); got != tc.want {
			t.Errorf("Credential(%s): %v, want %v", tc.name, got, tc.want)
		}
	}
	for _, tool := range Default().Tools() {
		for _, s := range tool.Secrets {
			if !Default().Credential(s, "x") {
				t.Errorf("tool %s's secret %s: not a credential", tool.Name, s)
			}
		}
	}
}
