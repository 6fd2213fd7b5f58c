package planner

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/devsandbox/devsandbox/config"
)

// TestPolicyJSON: policyJSON writes what json.Marshal writes for the proxy's
// configuration, byte for byte, so the policy digest keeps its value: nil and empty
// lists, every byte, the characters encoding/json escapes, invalid UTF-8 and random
// strings. It fails when config.Proxy or config.Credential gains a field (then
// policyJSON must write it too).
func TestPolicyJSON(t *testing.T) {
	fields := func(v any) []string {
		var out []string
		for f := range reflect.TypeOf(v).Fields() {
			out = append(out, f.Name+" "+f.Type.String()+" "+string(f.Tag))
		}
		return out
	}
	if got, want := fields(config.Proxy{}), []string{"Default string ", "MITM bool ", "Credentials []config.Credential ", "GitPush []string ", "GitSSH bool "}; !slices.Equal(got, want) {
		t.Fatalf("config.Proxy's fields are %q, policyJSON writes %q: add the new ones to it", got, want)
	}
	if got, want := fields(config.Credential{}), []string{"Host string ", "Header string ", "ValueEnv string ", "ValueFile string ", "Format string ", "PlaceholderEnv string "}; !slices.Equal(got, want) {
		t.Fatalf("config.Credential's fields are %q, policyJSON writes %q: add the new ones to it", got, want)
	}
	same := func(c config.Proxy) {
		t.Helper()
		want, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		if got := policyJSON(c); string(got) != string(want) {
			t.Errorf("policyJSON(%#v)\n = %s\nwant %s", c, got, want)
		}
	}
	same(config.Proxy{})
	same(config.Proxy{Credentials: []config.Credential{}, GitPush: []string{}})
	same(config.Proxy{Default: "deny", MITM: true, GitSSH: true, GitPush: []string{"agent/*", "refs/tags/v*"},
		Credentials: []config.Credential{
			{Host: "api.openai.com", Header: "Authorization", ValueEnv: "OPENAI_API_KEY", Format: "Bearer {}", PlaceholderEnv: "OPENAI_API_KEY"},
			{Host: "*.example.com:8443", Header: "X-Key", ValueFile: "/home/u/.key"},
		}})
	var all []byte
	for c := range 256 {
		all = append(all, byte(c))
		same(config.Proxy{Default: string([]byte{byte(c)})})
	}
	same(config.Proxy{Default: string(all)})
	for _, s := range []string{"<a href=\"x\">&amp;</a>", "\u2028\u2029\u2027\u202a", "\xe2\x80", "é\xffü", "\U0001F600\ufffd", "\\\"/"} {
		same(config.Proxy{GitPush: []string{s}, Credentials: []config.Credential{{Format: s}}})
	}
	r := rand.New(rand.NewPCG(1, 2))
	alphabet := []rune{'a', '"', '\\', '<', '&', '\n', 0, 0x1f, 0x7f, 'é', '\u2028', '\U0001F600'}
	for range 2000 {
		var s []byte
		for range r.IntN(12) {
			if r.IntN(8) == 0 {
				s = append(s, byte(r.IntN(256))) // maybe invalid UTF-8
			} else {
				s = append(s, string(alphabet[r.IntN(len(alphabet))])...)
			}
		}
		same(config.Proxy{Default: string(s), Credentials: []config.Credential{{Header: string(s)}}})
	}
}
