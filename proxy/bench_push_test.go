package proxy

import (
	"bytes"
	"io"
	"net/http"
	"testing"
)

// pushBenchSize is the body of the push benchmarks: a command list, then pack bytes.
const pushBenchSize = 128 << 20

// benchPush POSTs a push of pushBenchSize bytes to …/git-receive-pack through a Server,
// with or without a push policy (which reads the command list, allows it, and streams
// the rest); the origin reads and discards the body.
func benchPush(b *testing.B, policy bool) {
	o := newOrigin(b, false, func(w http.ResponseWriter, r *http.Request) { _, _ = io.Copy(io.Discard, r.Body) })
	pol := mustPolicy(b, []string{"origin.test"}, nil, "deny")
	if policy {
		pol = pol.WithGitPush(refPatterns(b, "agent/*"), false)
	}
	h := newHarness(b, Config{Policy: pol, Resolver: loopback("origin.test")})
	c := h.unixClient(b, nil)
	body := make([]byte, pushBenchSize)
	copy(body, pktl(pushID0+" "+pushID1+" refs/heads/agent/bench\x00report-status side-band-64k")+"0000PACK")
	u := "http://origin.test:" + o.port() + "/repo.git/git-receive-pack"
	b.SetBytes(pushBenchSize)
	for b.Loop() {
		resp, err := c.Post(u, "application/x-git-receive-pack-request", bytes.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("status %d", resp.StatusCode)
		}
	}
}

// BenchmarkPushNoPolicy is the baseline: the proxy forwards the push as any POST.
func BenchmarkPushNoPolicy(b *testing.B) { benchPush(b, false) }

// BenchmarkPushPolicy: the same push under proxy.git_push (issue target: within a few
// percent of BenchmarkPushNoPolicy).
func BenchmarkPushPolicy(b *testing.B) { benchPush(b, true) }
