package helper

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/devsandbox/devsandbox/internal/termsafe"
)

// WriteTable prints list for people: one line per project, with its containers
// (the kept one and its companion, their size together), its home volume, sandbox home and when it was last used. Every cell is a
// termsafe.Line: a name (the project's directory names it) or a label may be a
// sandbox's, and cannot act on the terminal, start a line or shift a column. A home
// size that is a lower bound (the walk stopped at a bound) reads "≥ 1.2G (stopped
// after 100000 entries)".
func WriteTable(out io.Writer, list []Sandbox) error {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "NAME\tPROJECT\tCONTAINER\tVOLUME\tHOME\tLAST USED")
	for _, s := range list {
		proj := s.Dir
		if proj == "" {
			proj = "?"
		} else if !s.DirExists {
			proj += " (gone)"
		}
		ctr := "-"
		if len(s.Containers) > 0 {
			// Every container: a kept one has its egress companion (NAME-px) beside it.
			names := slices.Sorted(slices.Values(s.Containers))
			ctr = fmt.Sprintf("%s %s", strings.Join(names, ","), size(s.ContainerSize))
			if s.Running {
				ctr += " running"
			}
		}
		vol := "-"
		if len(s.Volumes) > 0 {
			vol = s.Volumes[0]
		}
		home := "-"
		if s.Home != "" {
			home = size(s.HomeSize)
			if s.HomeSizeBound {
				home = "≥ " + home + " (" + s.HomeSizeStop + ")"
			}
		}
		last := "-"
		if !s.LastUsed.IsZero() {
			last = s.LastUsed.Format(time.DateTime)
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", termsafe.Line(s.Name), termsafe.Line(proj), termsafe.Line(ctr), termsafe.Line(vol), termsafe.Line(home), last)
	}
	return w.Flush()
}

// ByName indexes list by the sandboxes' names.
func ByName(list []Sandbox) map[string]Sandbox {
	m := make(map[string]Sandbox, len(list))
	for _, s := range list {
		m[s.Name] = s
	}
	return m
}

// size is n bytes for people.
func size(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1fG", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1fM", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1fK", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%dB", n)
}
