package main

import (
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"
)

// helpWidth is the column help text is wrapped to: it reads in an 80-column terminal.
const helpWidth = 80

// flagIndent is where a flag's description starts when its names fit before it.
const flagIndent = 28

// exitStatusHelp documents the exit statuses (DESIGN's CLI contract) in --help.
const exitStatusHelp = "the command's own; 128+N when it was killed by signal N; 126 when it " +
	"is not executable, 127 when it is not found; 125 when devsandbox itself failed or " +
	"was misused (an unknown flag, a bad value, a config error, an isolator that cannot " +
	"run, a protection that could not be applied), always with a message saying why. " +
	"`devsandbox doctor` exits 1 when the selected isolator cannot run."

// rootHelp renders `devsandbox --help`: the usage, the subcommands, the flags with
// their descriptions wrapped to helpWidth, and the exit statuses. It is the app's
// help template, so it must not contain template actions ("{{").
func rootHelp(usage, usageText string, cmds []*cli.Command, flags []cli.Flag) string {
	var b strings.Builder
	fmt.Fprintf(&b, "devsandbox - %s\n\nUSAGE:\n", usage)
	for _, para := range strings.Split(usageText, "\n\n") {
		for _, l := range strings.Split(para, "\n") {
			if strings.HasPrefix(l, "devsandbox ") {
				b.WriteString("   " + l + "\n")
			}
		}
		if text := strings.Join(nonCommandLines(para), " "); text != "" {
			b.WriteString("\n" + wrap(text, 3, 3, helpWidth))
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
	b.WriteString(wrap(exitStatusHelp, 3, 3, helpWidth))
	return b.String()
}

// describe wraps a subcommand's description for urfave/cli, which indents every line
// by three columns and wraps nothing itself.
func describe(text string) string {
	return strings.TrimSuffix(wrap(text, 0, 0, helpWidth-3), "\n")
}

// nonCommandLines returns the lines of para that are prose, not a usage line.
func nonCommandLines(para string) []string {
	var out []string
	for _, l := range strings.Split(para, "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "devsandbox ") {
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
		w := wrap(desc, indent, indent, helpWidth)
		return head + strings.Repeat(" ", indent-len(head)) + strings.TrimLeft(w, " ")
	}
	return head + "\n" + wrap(desc, indent, indent, helpWidth)
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
