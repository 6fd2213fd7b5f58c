package isolator_test

import (
	"context"
	"testing"

	"github.com/devsandbox/devsandbox/isolator"
)

// fakeIso is an isolator whose Check answers state; it runs nothing.
type fakeIso struct {
	name  string
	state isolator.State
}

var _ isolator.Isolator = fakeIso{}

func (f fakeIso) Name() string { return f.name }
func (f fakeIso) Check(context.Context) isolator.Status {
	return isolator.Status{State: f.state, Reason: "fake", Fix: "none"}
}
func (f fakeIso) Render(*isolator.Plan) (isolator.Rendered, error) { panic("unexpected Render") }
func (f fakeIso) Run(context.Context, *isolator.Plan, isolator.Stdio) (int, error) {
	panic("unexpected Run")
}

// Doctor says which isolator the selection runs, "auto" included, and its last line
// names it.
func TestDoctorVerdict(t *testing.T) {
	table := func(bwrap, docker isolator.State) isolator.Table {
		return isolator.Table{
			"bwrap":  func() isolator.Isolator { return fakeIso{"bwrap", bwrap} },
			"docker": func() isolator.Isolator { return fakeIso{"docker", docker} },
		}
	}
	order := []string{"bwrap", "docker"}
	tests := []struct {
		name          string
		bwrap, docker isolator.State
		selected      string
		runs, verdict string
	}{
		{"auto picks the first", isolator.Active, isolator.Active, "auto", "bwrap", "selected isolator: auto, which picks bwrap here — can run"},
		{"auto falls back", isolator.Unavailable, isolator.Active, "auto", "docker", "selected isolator: auto, which picks docker here — can run"},
		{"auto finds none", isolator.Unavailable, isolator.Unavailable, "auto", "", "selected isolator: auto — CANNOT run"},
		{"chosen and usable", isolator.Unavailable, isolator.Active, "docker", "docker", "selected isolator: docker — can run"},
		{"chosen and unusable", isolator.Unavailable, isolator.Active, "bwrap", "", "selected isolator: bwrap — CANNOT run"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rows, runs := table(tt.bwrap, tt.docker).Doctor(context.Background(), tt.selected, order)
			if len(rows) != 2 || runs != tt.runs {
				t.Fatalf("Doctor: %d rows, runs %q; want 2 rows, runs %q", len(rows), runs, tt.runs)
			}
			if v := isolator.Verdict(tt.selected, runs); v != tt.verdict {
				t.Errorf("Verdict:\n got %q\nwant %q", v, tt.verdict)
			}
		})
	}
}
