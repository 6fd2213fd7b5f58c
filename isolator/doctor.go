package isolator

import "context"

// Doctor checks every isolator of t in detail, in name order: each one's host
// requirements (Diagnoser) followed by its own status as "<name> isolator". runs is
// the isolator selected would run: selected itself when it can run; for "auto", the
// one Select picks (the first name of order whose QuickCheck, else Check, passes)
// when its Check passes too; "" when none can. A run under auto does not fall back
// past the isolator it picked, so when the pick fails its Check, runs is "" and a row
// "auto" says so, naming an isolator that can run to choose instead. It may start
// processes; it is never on the launch path.
func (t Table) Doctor(ctx context.Context, selected string, order []string) (rows []Check, runs string) {
	usable := map[string]bool{}
	quick := map[string]bool{}
	for _, name := range t.Names() {
		iso := t[name]()
		if d, isD := iso.(Diagnoser); isD {
			rows = append(rows, d.Diagnose(ctx)...)
		}
		st := iso.Check(ctx)
		usable[name] = st.State == Active
		quick[name] = usable[name]
		if q, ok := iso.(Quick); ok {
			quick[name] = q.QuickCheck().State == Active
		}
		rows = append(rows, Check{Name: name + " isolator", Status: st})
	}
	if selected != "auto" {
		if usable[selected] {
			return rows, selected
		}
		return rows, ""
	}
	for i, n := range order {
		if !quick[n] {
			continue
		}
		if usable[n] {
			return rows, n
		}
		st := Status{State: Unavailable, Reason: "auto picks " + n + " here (its quick check passes), which cannot run (its row above says why); a run stops there rather than try another"}
		st.Fix = "fix " + n
		for _, other := range order[i+1:] {
			if usable[other] {
				st.Fix += `, or choose ` + other + ` (isolator = "` + other + `", --isolator=` + other + `)`
				break
			}
		}
		return append(rows, Check{Name: "auto", Status: st}), ""
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
