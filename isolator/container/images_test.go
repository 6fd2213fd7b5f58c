package container

import "testing"

// Only an image devsandbox named and labelled as another build's default image is
// stale; a user's image built FROM it (same labels, another name), the current
// build's, and one with no name are not.
func TestStaleDefault(t *testing.T) {
	old := map[string]string{LabelImage: "default", LabelVersion: "1111111"}
	cur := map[string]string{LabelImage: "default", LabelVersion: "2222222"}
	derived := map[string]string{LabelImage: "default", LabelVersion: "1111111", "dev.devsandbox.base": "sha256:ab"}
	cases := []struct {
		name string
		img  Image
		want string
	}{
		{"another build's, docker", Image{Names: []string{"devsandbox/default:1111111"}, Labels: old}, "the default image of devsandbox 1111111, this is 2222222"},
		{"another build's, podman", Image{Names: []string{"localhost/devsandbox/default:1111111"}, Labels: old}, "the default image of devsandbox 1111111, this is 2222222"},
		{"fully qualified", Image{Names: []string{"docker.io/devsandbox/default:1111111"}, Labels: old}, "the default image of devsandbox 1111111, this is 2222222"},
		{"this build's", Image{Names: []string{"devsandbox/default:2222222"}, Labels: cur}, ""},
		{"the user's, FROM the default image", Image{Names: []string{"me/tools:1"}, Labels: old}, ""},
		{"also named by the user", Image{Names: []string{"devsandbox/default:1111111", "me/tools:1"}, Labels: old}, ""},
		{"under another version's tag", Image{Names: []string{"devsandbox/default:latest"}, Labels: old}, ""},
		{"no name (a derived image, a dangling one)", Image{Labels: derived}, ""},
		{"dangling, as docker lists it", Image{Names: []string{"<none>:<none>"}, Labels: old}, ""},
		{"no version label", Image{Names: []string{"devsandbox/default:"}, Labels: map[string]string{LabelImage: "default"}}, ""},
		{"not the default image", Image{Names: []string{"devsandbox/default:1111111"}, Labels: map[string]string{LabelVersion: "1111111"}}, ""},
	}
	for _, tc := range cases {
		if got := StaleDefault(tc.img, "2222222"); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
