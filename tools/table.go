package tools

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/devsandbox/devsandbox/internal/termsafe"
)

// WriteTable prints res for people (`devsandbox tools list`): one line per tool,
// whether it was detected and is enabled, its API keys and what it binds.
func WriteTable(out io.Writer, res []Resolved) error {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "TOOL\tDETECTED\tENABLED\tKEYS\tBINDS")
	for _, r := range res {
		keys := "-"
		if len(r.Keys) > 0 {
			keys = strings.Join(KeyNames(r.Keys), ",")
		}
		var binds []string
		for _, b := range r.Bindings {
			dst := b.Dest
			if b.HomeRelativeDest != "" {
				dst = "~/" + b.HomeRelativeDest
			}
			binds = append(binds, dst+" ("+b.Mode.String()+")")
		}
		fmt.Fprintf(w, "%s\t%v\t%v\t%s\t%s\n", termsafe.Line(r.Name), r.Detected, r.Enabled, termsafe.Line(keys), termsafe.Line(strings.Join(binds, ", ")))
	}
	return w.Flush()
}
