// Package clihelp lays out help pages for urfave/cli: a top-level page with the
// usage, the commands and the flags wrapped to a width, and subcommand descriptions
// wrapped for urfave/cli's own layout.
package clihelp

import (
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"
)

// Width is the column help text is wrapped to: it reads in an 80-column terminal.
const Width = 80

// flagIndent is where a flag's description starts when its names fit before it.
const flagIndent = 28

// Root renders the top-level help page of name: the usage, the commands, the flags
// with their descriptions wrapped to Width, and the exit statuses. It is the app's
// help template, so it must not contain template actions ("{{").
func Root(name, usage, usageText string, cmds []*cli.Command, flags []cli.Flag, exitStatus string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s - %s\n\nUSAGE:\n", name, usage)
	for _, para := range strings.Split(usageText, "\n\n") {
		for _, l := range strings.Split(para, "\n") {
			if strings.HasPrefix(l, name+" ") {
				b.WriteString("   " + l + "\n")
			}
		}
		if text := strings.Join(nonCommandLines(name, para), " "); text != "" {
			b.WriteString("\n" + wrap(text, 3, 3, Width))
		}
	}
	b.WriteString("\nCOMMANDS:\n")
	for _, c := range cmds {
		if c.Hidden {
			continue
		}
		b.WriteString(entry(c.Name, c.Usage, 14))
	}
	b.WriteString("\nFLAGS:\n")
	for _, f := range flags {
		names, usage := flagDoc(f)
		b.WriteString(entry(names, usage, flagIndent))
	}
	b.WriteString(entry("-h, --help", "show this help", flagIndent))
	b.WriteString("\nEXIT STATUS:\n")
	b.WriteString(wrap(exitStatus, 3, 3, Width))
	return b.String()
}

// Describe wraps a subcommand's description for urfave/cli, which indents every line
// by three columns and wraps nothing itself.
func Describe(text string) string {
	return strings.TrimSuffix(wrap(text, 0, 0, Width-3), "\n")
}

// nonCommandLines returns the lines of para that are prose, not a usage line.
func nonCommandLines(name, para string) []string {
	var out []string
	for _, l := range strings.Split(para, "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, name+" ") {
			out = append(out, l)
		}
	}
	return out
}

// entry renders one name and its description: on one line when the name fits before
// indent, else the description starts on the next line at indent.
func entry(name, desc string, indent int) string {
	head := "   " + name
	if len(head)+2 <= indent {
		w := wrap(desc, indent, indent, Width)
		return head + strings.Repeat(" ", indent-len(head)) + strings.TrimLeft(w, " ")
	}
	return head + "\n" + wrap(desc, indent, indent, Width)
}

// flagDoc returns a flag's names with its value placeholder ("-e, --env NAME=VALUE")
// and its description without the placeholder's backquotes. The placeholder is the
// first `quoted` word of the usage, as urfave/cli reads it.
func flagDoc(f cli.Flag) (names, usage string) {
	d, _ := f.(cli.DocGenerationFlag)
	if d != nil {
		usage = d.GetUsage()
	}
	placeholder := ""
	takesValue := d != nil && d.TakesValue()
	if i := strings.IndexByte(usage, '`'); i >= 0 && takesValue {
		if j := strings.IndexByte(usage[i+1:], '`'); j >= 0 {
			placeholder = usage[i+1 : i+1+j]
			usage = usage[:i] + placeholder + usage[i+2+j:]
		}
	}
	if placeholder == "" && takesValue {
		placeholder = "VALUE"
	}
	ns := f.Names()
	// Short names first, as people type them.
	var dashed []string
	for i := len(ns) - 1; i >= 0; i-- {
		if len(ns[i]) == 1 {
			dashed = append(dashed, "-"+ns[i])
		}
	}
	for _, n := range ns {
		if len(n) > 1 {
			dashed = append(dashed, "--"+n)
		}
	}
	names = strings.Join(dashed, ", ")
	if placeholder != "" {
		names += " " + placeholder
	}
	return names, usage
}

// wrap fills text into lines of at most width columns: the first line indented by
// first spaces, the others by rest. A word longer than a line stands alone.
func wrap(text string, first, rest, width int) string {
	var b strings.Builder
	line, indent := "", first
	flush := func() {
		b.WriteString(strings.Repeat(" ", indent) + line + "\n")
		line, indent = "", rest
	}
	for _, w := range strings.Fields(text) {
		if line != "" && indent+len(line)+1+len(w) > width {
			flush()
		}
		if line == "" {
			line = w
		} else {
			line += " " + w
		}
	}
	if line != "" || b.Len() == 0 {
		flush()
	}
	return b.String()
}
