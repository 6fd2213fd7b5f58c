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

// quickIso passes its QuickCheck whatever its Check says: a bwrap that is installed
// but cannot run here (user namespaces disabled).
type quickIso struct{ fakeIso }

func (quickIso) QuickCheck() isolator.Status { return isolator.Status{State: isolator.Active} }

// Under auto, doctor names the isolator a run would pick, as Select picks it (by
// QuickCheck): one that is installed but cannot run is not passed over for the next,
// since a run would not pass it over either; a row "auto" says so and names the
// isolator to choose instead.
func TestDoctorAutoPicksAsARun(t *testing.T) {
	order := []string{"bwrap", "docker"}
	for _, tt := range []struct {
		name    string
		docker  isolator.State
		runs    string
		autoRow *isolator.Check
	}{
		{"docker could run", isolator.Active, "", &isolator.Check{Name: "auto", Status: isolator.Status{State: isolator.Unavailable,
			Reason: "auto picks bwrap here (its quick check passes), which cannot run (its row above says why); a run stops there rather than try another",
			Fix:    `fix bwrap, or choose docker (isolator = "docker", --isolator=docker)`}}},
		{"nothing could run", isolator.Unavailable, "", &isolator.Check{Name: "auto", Status: isolator.Status{State: isolator.Unavailable,
			Reason: "auto picks bwrap here (its quick check passes), which cannot run (its row above says why); a run stops there rather than try another",
			Fix:    "fix bwrap"}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			table := isolator.Table{
				"bwrap":  func() isolator.Isolator { return quickIso{fakeIso{"bwrap", isolator.Unavailable}} },
				"docker": func() isolator.Isolator { return fakeIso{"docker", tt.docker} },
			}
			iso, _, err := isolator.Select(context.Background(), "auto", table, order)
			if err != nil || iso.Name() != "bwrap" {
				t.Fatalf("Select picks %v (%v); the case tests nothing", iso, err)
			}
			rows, runs := table.Doctor(context.Background(), "auto", order)
			if runs != tt.runs || len(rows) != 3 || rows[2] != *tt.autoRow {
				t.Errorf("Doctor: runs %q, rows %+v\nwant runs %q and last row %+v", runs, rows, tt.runs, *tt.autoRow)
			}
			if v := isolator.Verdict("auto", runs); v != "selected isolator: auto — CANNOT run" {
				t.Errorf("Verdict %q", v)
			}
		})
	}
}
