package proxy

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"slices"
	"sync"
	"testing"

	"github.com/devsandbox/devsandbox/proxy/audit"
)

// recordingDial records the addresses it is asked to dial and fails them all.
type recordingDial struct {
	mu    sync.Mutex
	addrs []string
}

var errNoDial = errors.New("test dial refused")

func (r *recordingDial) dial(_ context.Context, _, addr string) (net.Conn, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.addrs = append(r.addrs, addr)
	return nil, errNoDial
}

func TestDialerRebinding(t *testing.T) {
	tests := []struct {
		name     string
		allow    []string
		wantDial []string // nil: denied before any dial
	}{
		{"no allow entry", nil, nil},
		{"wildcard is not enough", []string{"*.test"}, nil},
		{"exact name", []string{"rebind.test"}, []string{"127.0.0.1:8080"}},
		{"the address", []string{"127.0.0.1"}, []string{"127.0.0.1:8080"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rd := &recordingDial{}
			d := &Dialer{Policy: mustPolicy(t, tt.allow, nil, "allow"), Resolver: loopback("rebind.test"), Dial: rd.dial}
			_, err := d.DialContext(context.Background(), "tcp", "rebind.test:8080")
			if tt.wantDial == nil {
				var denied *DeniedError
				if !errors.Is(err, ErrDenied) || !errors.As(err, &denied) || denied.Decision.Rule != audit.RulePrivate {
					t.Fatalf("err = %v, want a private-address denial", err)
				}
			} else if !errors.Is(err, errNoDial) {
				t.Fatalf("err = %v, want the dial's error", err)
			}
			if !slices.Equal(rd.addrs, tt.wantDial) {
				t.Errorf("dialed %v, want %v", rd.addrs, tt.wantDial)
			}
		})
	}
}

// flipResolver answers a public address first and loopback afterwards.
type flipResolver struct{ calls int }

func (f *flipResolver) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	f.calls++
	if f.calls == 1 {
		return addrs("93.184.216.34", "::ffff:93.184.216.35"), nil
	}
	return addrs("127.0.0.1"), nil
}

func TestDialerDialsWhatItChecked(t *testing.T) {
	rd := &recordingDial{}
	fr := &flipResolver{}
	d := &Dialer{Policy: mustPolicy(t, nil, nil, "allow"), Resolver: fr, Dial: rd.dial}
	if _, err := d.DialContext(context.Background(), "tcp", "flip.test:443"); !errors.Is(err, errNoDial) {
		t.Fatal(err)
	}
	want := []string{"93.184.216.34:443", "93.184.216.35:443"}
	if fr.calls != 1 || !slices.Equal(rd.addrs, want) {
		t.Errorf("resolved %d times, dialed %v; want once, %v", fr.calls, rd.addrs, want)
	}
}

func TestDialerDeniedNameIsNotResolved(t *testing.T) {
	res := loopback("blocked.test")
	rd := &recordingDial{}
	d := &Dialer{Policy: mustPolicy(t, nil, []string{"blocked.test"}, "allow"), Resolver: res, Dial: rd.dial}
	_, err := d.DialContext(context.Background(), "tcp", "blocked.test:443")
	if !errors.Is(err, ErrDenied) {
		t.Fatalf("err = %v, want ErrDenied", err)
	}
	if res.calls.Load() != 0 || len(rd.addrs) != 0 {
		t.Errorf("resolved %d times, dialed %v; want neither", res.calls.Load(), rd.addrs)
	}
}

func TestDialerResolveFailure(t *testing.T) {
	d := &Dialer{Policy: mustPolicy(t, nil, nil, "allow"), Resolver: loopback()}
	tg, err := d.Check(context.Background(), "nowhere.test", 443)
	var dns *net.DNSError
	if !errors.As(err, &dns) || errors.Is(err, ErrDenied) || tg.Decision != (Decision{}) {
		t.Errorf("Check = %+v, %v; want a DNS error and no decision", tg, err)
	}
}
