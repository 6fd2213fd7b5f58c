package proxy

import (
	"bytes"
	"io"
	"net/http"
	"testing"
)

// BenchmarkRedactBody is the cost of searching a credential host's response body:
// the value alone (the masking before the encoded forms) against every form of a
// Bearer and of a Basic credential, over 16 MiB of text.
func BenchmarkRedactBody(b *testing.B) {
	body := bytes.Repeat([]byte("{\"id\": 12345, \"name\": \"a repository\", \"url\": \"https://example.com/o/r\"}\n"), 16<<20/72)
	bearer := &credential{Credential: Credential{Format: "Bearer {}", Value: testToken}}
	basic := &credential{Credential: Credential{Format: "Basic {}", Value: "eC1hY2Nlc3MtdG9rZW46" + "Z2hwX3JlYWxUT0tFTnZhbHVlMDEyMzQ1Njc4OWFiY2RlZkFCQ0RFRg=="}}
	for _, tc := range []struct {
		name string
		c    *credential
	}{
		{"value", &credential{Credential: bearer.Credential, masks: bearer.computeForms()[:1]}},
		{"bearer", bearer},
		{"basic", basic},
	} {
		b.Run(tc.name+"-"+itoa(len(tc.c.forms()))+"forms", func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				resp := &http.Response{Header: http.Header{}, Body: io.NopCloser(bytes.NewReader(body))}
				if err := (&applied{creds: []*credential{tc.c}}).redactBody(resp); err != nil {
					b.Fatal(err)
				}
				if _, err := io.Copy(io.Discard, resp.Body); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func itoa(n int) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}
