package tools

import "testing"

// launchEnv is what a launch judges when variables are passed by value
// (env.passthrough, a tool's variables, env.set): every one goes through
// Registry.Credential at each launch, on every isolator.
var launchEnv = [][2]string{
	{"PATH", "/usr/local/bin:/usr/bin:/bin:/home/u/go/bin"}, {"LANG", "C.UTF-8"}, {"TERM", "xterm-256color"},
	{"EDITOR", "vim"}, {"GOPROXY", "https://proxy.golang.org,direct"}, {"GOFLAGS", "-mod=mod"},
	{"NODE_OPTIONS", "--max-old-space-size=4096"}, {"HTTPS_PROXY", "http://proxy.corp:3128"},
	{"DATABASE_URL", "postgres://app@db:5432/app?sslmode=disable&application_name=dev"},
	{"GIT_AUTHOR_NAME", "Dev"}, {"SENTRY_DSN", "https://abc@o1.ingest.sentry.io/2"}, {"GH_TOKEN", "ghp_0123456789abcdefXYZ0123456789abcdef"},
}

// BenchmarkRegistryCredential is one launch's judgement of its passed variables.
func BenchmarkRegistryCredential(b *testing.B) {
	r := Default()
	b.ReportAllocs()
	for b.Loop() {
		for _, kv := range launchEnv {
			r.Credential(kv[0], kv[1])
		}
	}
}
