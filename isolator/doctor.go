package isolator

import "context"

// Doctor checks every isolator of t in detail, in name order: each one's host
// requirements (Diagnoser) followed by its own status as "<name> isolator". ok
// reports whether selected could run; for "auto", whether any name of order could.
// It may start processes; it is never on the launch path.
func (t Table) Doctor(ctx context.Context, selected string, order []string) (rows []Check, ok bool) {
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
		return rows, usable[selected]
	}
	for _, n := range order {
		ok = ok || usable[n]
	}
	return rows, ok
}
