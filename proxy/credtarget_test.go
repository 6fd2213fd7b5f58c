package proxy

import (
	"bufio"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
)

// keySeen is an origin that records the X-Key header of every request it answers.
type keySeen struct {
	*origin
	mu   sync.Mutex
	keys []string
}

func newKeySeen(t *testing.T, h http.HandlerFunc) *keySeen {
	k := &keySeen{}
	k.origin = newOrigin(t, false, func(w http.ResponseWriter, r *http.Request) {
		k.mu.Lock()
		k.keys = append(k.keys, r.Header.Get("X-Key"))
		k.mu.Unlock()
		if h != nil {
			h(w, r)
			return
		}
		io.WriteString(w, "ok")
	})
	return k
}

func (k *keySeen) seen() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([]string(nil), k.keys...)
}

// TestCredentialStaysWithItsTarget: the sandbox cannot get a held credential attached
// to a request that goes anywhere but the credential's destination, whatever it writes:
// an absolute URI for another host with the credential host in Host, a second request
// for another host on a keep-alive connection that carried the credential, a request
// inside a tunnel to the credential's host that names another host or port (in Host
// or in an absolute URI), or a redirect from the credential's host to another (the
// proxy never follows one). Both hosts are allowed, so only the credential's binding
// to its destination stands between the sandbox and the value.
func TestCredentialStaysWithItsTarget(t *testing.T) {
	other := newKeySeen(t, nil)
	svc := newKeySeen(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/redirect" {
			http.Redirect(w, r, "http://other.test:"+other.port()+"/landed", http.StatusFound)
			return
		}
		io.WriteString(w, "ok")
	})
	svcHost, otherHost := "svc.test:"+svc.port(), "other.test:"+other.port()
	cred := Credential{Host: "http://" + svcHost, Header: "X-Key", Value: "k-held-123456", Name: "SVC_KEY"}
	h := newHarness(t, Config{Policy: mustPolicy(t, []string{"svc.test", "other.test"}, nil, "deny"),
		Resolver: loopback("svc.test", "other.test"), Credentials: []Credential{cred}, CA: &newTestCA(t).TLS})

	// send writes raw requests on one connection to the proxy, after a CONNECT to
	// tunnel when set, and returns the status of each response.
	send := func(t *testing.T, tunnel string, reqs ...string) []int {
		t.Helper()
		c := h.dialUnix(t)
		defer c.Close()
		br := bufio.NewReader(c)
		if tunnel != "" {
			resp, _, r := rawConnect(t, c, tunnel)
			if resp.StatusCode != 200 {
				t.Fatalf("CONNECT %s: %d", tunnel, resp.StatusCode)
			}
			br = r
		}
		var codes []int
		for _, req := range reqs {
			if _, err := io.WriteString(c, req); err != nil {
				t.Fatal(err)
			}
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("%q: %v", req, err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			codes = append(codes, resp.StatusCode)
		}
		return codes
	}
	get := func(target, host string) string {
		return "GET " + target + " HTTP/1.1\r\nHost: " + host + "\r\n\r\n"
	}

	cases := []struct {
		name   string
		tunnel string
		reqs   []string
		codes  []int
		svc    []string // the X-Key values the credential's host saw
		other  []string // and the other host
	}{
		{"absolute URI elsewhere, Host the credential's", "",
			[]string{get("http://"+otherHost+"/", svcHost)}, []int{200}, nil, []string{""}},
		{"keep-alive, then another host", "",
			[]string{get("http://"+svcHost+"/", svcHost), get("http://"+otherHost+"/", otherHost)}, []int{200, 200},
			[]string{cred.Value}, []string{""}},
		{"tunnel, Host another host", svcHost,
			[]string{get("/", svcHost), get("/", otherHost)}, []int{200, 421}, []string{cred.Value}, nil},
		{"tunnel, Host another port", svcHost,
			[]string{get("/", "svc.test:"+other.port())}, []int{421}, nil, nil},
		{"tunnel, absolute URI elsewhere", svcHost,
			[]string{get("http://"+otherHost+"/", svcHost)}, []int{421}, nil, nil},
		{"redirect elsewhere", "",
			[]string{get("http://"+svcHost+"/redirect", svcHost)}, []int{302}, []string{cred.Value}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s0, o0 := len(svc.seen()), len(other.seen())
			codes := send(t, tc.tunnel, tc.reqs...)
			if !slices.Equal(codes, tc.codes) {
				t.Errorf("statuses %v, want %v", codes, tc.codes)
			}
			if got := svc.seen()[s0:]; !slices.Equal(got, tc.svc) {
				t.Errorf("the credential's host saw X-Key %q, want %q", got, tc.svc)
			}
			if got := other.seen()[o0:]; !slices.Equal(got, tc.other) {
				t.Errorf("the other host saw X-Key %q, want %q", got, tc.other)
			}
			for _, k := range other.seen() {
				if strings.Contains(k, cred.Value) {
					t.Fatalf("the other host received the held credential")
				}
			}
		})
	}
}
