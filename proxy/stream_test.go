package proxy

import (
	"bufio"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestStreamedEventNotHeldBack: a streamed response from a credential's host (server-sent
// events, as streaming APIs send) reaches the client event by event: the masking holds
// back only a tail that could begin a masked form, not the last bytes of every event
// until the next one comes.
func TestStreamedEventNotHeldBack(t *testing.T) {
	cred := Credential{Host: "example.com", Header: "Authorization", Format: "Bearer {}", Value: testToken, Name: "TOKEN"}
	next := make(chan struct{})
	m := newMITM(t, Config{Credentials: []Credential{cred}}, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, ev := range []string{"data: first\n\n", "data: " + r.Header.Get("Authorization") + "\n\n"} {
			w.Write([]byte(ev))
			w.(http.Flusher).Flush()
			select {
			case <-next:
			case <-r.Context().Done():
				return
			}
		}
	})
	for _, h2 := range []bool{false, true} {
		req, _ := http.NewRequest("GET", "https://example.com/stream", nil)
		resp, err := m.client(t, h2).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		br := bufio.NewReader(resp.Body)
		got := make(chan string, 1)
		go func() { l, _ := br.ReadString('\n'); br.ReadString('\n'); got <- l }()
		select {
		case l := <-got:
			if l != "data: first\n" {
				t.Errorf("h2=%v: the first event is %q", h2, l)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("h2=%v: the first event did not arrive before the host sent more", h2)
		}
		next <- struct{}{}
		l, _ := br.ReadString('\n')
		if strings.Contains(l, testToken) || !strings.HasPrefix(l, "data: Bearer ***") {
			t.Errorf("h2=%v: the echo came as %q", h2, l)
		}
		next <- struct{}{}
		resp.Body.Close()
	}
}
