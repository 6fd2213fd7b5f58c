package tools

import (
	"reflect"
	"testing"
)

func TestResolve(t *testing.T) {
	on, off := true, false
	r := NewRegistry(Git(), SSH(), Codex())
	h := fakeHost(files(home+"/.gitconfig", "/tmp/agent.sock"), "ssh", "codex")
	h.Env["SSH_AUTH_SOCK"] = "/tmp/agent.sock"
	got := Resolve(r, h, map[string]*bool{"ssh": &off, "codex": nil, "git": &on, "unknown": &on})
	want := []Resolved{
		{
			Name: "git", Description: Git().Description, Detected: true, Enabled: true,
			Bindings: []Binding{ro(".gitconfig")}, // the other optional files are absent
			Env:      Git().Env, Egress: Git().Egress,
		},
		{
			Name: "ssh", Description: SSH().Description, Detected: true, Enabled: false,
			Env: nil, Egress: SSH().Egress,
		},
		{
			Name: "codex", Description: Codex().Description, Detected: true, Enabled: true,
			Env: Codex().Env, Secrets: Codex().Secrets, Egress: Codex().Egress, Keys: Codex().Keys,
			// ~/.codex is absent: nothing to bind
		},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Resolve:\n got %+v\nwant %+v", got, want)
	}
}

func TestResolveEnvSetNames(t *testing.T) {
	h := fakeHost(files("/tmp/agent.sock"), "ssh")
	h.Env["SSH_AUTH_SOCK"] = "/tmp/agent.sock"
	got := Resolve(NewRegistry(SSH()), h, nil)
	if len(got) != 1 || !got[0].Enabled || !reflect.DeepEqual(got[0].Env, []string{"SSH_AUTH_SOCK"}) {
		t.Fatalf("ssh resolved = %+v, want enabled with env [SSH_AUTH_SOCK]", got)
	}
	want := []Binding{
		{Source: "/tmp/agent.sock", Dest: AgentSocket, Mode: RW},
		{HomeRelativeDest: ".ssh/config", Mode: RO, Content: SSHConfigOverlay(nil, "")},
	}
	if !reflect.DeepEqual(got[0].Bindings, want) {
		t.Fatalf("ssh bindings = %+v, want %+v", got[0].Bindings, want)
	}
}

func TestResolveUndetected(t *testing.T) {
	on := true
	got := Resolve(NewRegistry(Gemini()), fakeHost(nil), nil)
	if got[0].Detected || got[0].Enabled || got[0].Bindings != nil {
		t.Fatalf("gemini on an empty host = %+v, want neither detected nor enabled", got[0])
	}
	got = Resolve(NewRegistry(Gemini()), fakeHost(nil), map[string]*bool{"gemini": &on})
	if got[0].Detected || !got[0].Enabled {
		t.Fatalf("gemini enabled by config = %+v, want enabled, not detected", got[0])
	}
}
