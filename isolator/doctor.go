package isolator

import "context"

// Doctor checks every isolator of t in detail, in name order: each one's host
// requirements (Diagnoser) followed by its own status as "<name> isolator". runs is
// the isolator selected would run: selected itself when it can run; for "auto", the
// first name of order that can, as Select picks it; "" when none can. Doctor judges
// by Check, Select by QuickCheck where there is one: the cheap check may differ in a
// detail the full one sees. It may start processes; it is never on the launch path.
func (t Table) Doctor(ctx context.Context, selected string, order []string) (rows []Check, runs string) {
	usable := map[string]bool{}
	for _, name := range t.Names() {
		iso := t[name]()
		if d, isD := iso.(Diagnoser); isD {
			rows = append(rows, d.Diagnose(ctx)...)
		}
		st := iso.Check(ctx)
		usable[name] = st.State == Active
		rows = append(rows, Check{Name: name + " isolator", Status: st})
	}
	if selected != "auto" {
		order = []string{selected}
	}
	for _, n := range order {
		if usable[n] {
			return rows, n
		}
	}
	return rows, ""
}

// Verdict is doctor's last line: the selected isolator, the one "auto" picked, and
// whether it can run.
func Verdict(selected, runs string) string {
	switch {
	case runs == "":
		return "selected isolator: " + selected + " — CANNOT run"
	case selected == "auto":
		return "selected isolator: auto, which picks " + runs + " here — can run"
	}
	return "selected isolator: " + selected + " — can run"
}
