package tools

import (
	"flag"
	"fmt"
	"os"
	"path"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the generated part of docs/tools.md from the registry")

const (
	docPath     = "../docs/tools.md"
	docBegin    = "<!-- BEGIN tools reference: generated from the registry by `go test ./tools -run TestToolsReference -update`; do not edit by hand -->"
	docEnd      = "<!-- END tools reference -->"
	docProject  = "/home/u/project" // the project of the reference host
	docPathHint = ".path-"          // where the reference host finds every command: ~/.path-<name>/bin/<name>
)

// ownStates are the state lists of the tools' own directories (see ownDir), in the order
// of the tool's bindings: the reference renders what each keeps. TestToolsReference
// fails when a tool's own directories and this table disagree.
var ownStates = map[string][]func(Host) []State{
	"claude":   {claudeState},
	"codex":    {func(Host) []State { return codexState() }},
	"gemini":   {func(Host) []State { return geminiState() }},
	"copilot":  {func(Host) []State { return copilotState() }},
	"cursor":   {func(Host) []State { return cursorState() }, func(Host) []State { return cursorConfigState() }},
	"amp":      {func(Host) []State { return ampState() }},
	"goose":    {func(Host) []State { return gooseState() }},
	"qwen":     {func(Host) []State { return qwenState() }},
	"pi":       {func(Host) []State { return piState() }},
	"opencode": {func(Host) []State { return opencodeState() }},
}

// referenceHost is the host the reference describes: home /home/u, every path there,
// every command installed under a hidden entry of the home (~/.path-<name>/bin), no
// symlinks, and, with vars, each of those variables set to a path under the home
// named after it (~/.$NAME), so that what a variable adds or moves shows.
func referenceHost(vars []string) Host {
	env := map[string]string{}
	for _, v := range vars {
		env[v] = home + "/.$" + v
	}
	return Host{
		Home:         home,
		Env:          env,
		Exists:       func(string) bool { return true },
		LookPath:     func(n string) (string, bool) { return home + "/" + docPathHint + n + "/bin/" + n, true },
		EvalSymlinks: func(p string) (string, error) { return p, nil },
		Project:      docProject,
	}
}

// docVars are the variables whose value a tool's bindings read: those it declares, and
// the ssh agent's socket.
func docVars(t Tool) []string {
	return append(slices.Clone(t.Env), "SSH_AUTH_SOCK")
}

// renderPath writes a binding's destination for people: ~/rel below the sandbox home,
// $NAME for a variable's value, "the install of `name`" for where the reference host
// found a command, <project> for the project's key.
func renderPath(b Binding) string {
	p := b.Dest
	if b.HomeRelativeDest != "" {
		p = "~/" + b.HomeRelativeDest
	}
	p = strings.ReplaceAll(p, claudeKey(docProject), "<project>")
	if rest, ok := strings.CutPrefix(p, "~/.$"); ok {
		return "`$" + rest + "`"
	}
	if rest, ok := strings.CutPrefix(p, "~/"+docPathHint); ok {
		name, sub, _ := strings.Cut(rest, "/")
		if sub == "bin" {
			return "the PATH directory of `" + name + "`"
		}
		return "the install of `" + name + "`"
	}
	return "`" + p + "`"
}

func renderBinding(b Binding) string {
	s := renderPath(b) + " " + b.Mode.String()
	if b.Content != nil {
		s += " generated"
	}
	if b.Optional {
		s += " optional"
	}
	if b.Create {
		s += " created"
	}
	return s
}

func renderKey(k Key) string {
	how := "`" + k.Header + "`"
	if k.Format != "" && k.Format != "{}" {
		how = "`" + k.Header + ": " + strings.TrimSpace(strings.ReplaceAll(k.Format, "{}", "")) + "`"
	}
	s := "`" + k.Env + "` in " + how
	if k.Host != "" {
		s += " to `" + k.Host + "`"
	}
	if k.BaseURLEnv != "" {
		s += ", moved by `" + k.BaseURLEnv + "`"
	}
	if k.Endpoints != "" {
		s += ", moved or added to by " + k.Endpoints.Doc()
	}
	if k.IgnoredEnv != "" {
		s += " (not by `" + k.IgnoredEnv + "`)"
	}
	return s
}

func quoted(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = "`" + s + "`"
	}
	return out
}

// docItems is one tool's reference: its description and, per kind, its items in order.
type docItems struct {
	desc  string
	kinds []string
	items map[string][]string
}

func (d *docItems) add(kind string, items ...string) {
	if len(items) == 0 {
		return
	}
	if d.items == nil {
		d.items = map[string][]string{}
	}
	if _, ok := d.items[kind]; !ok {
		d.kinds = append(d.kinds, kind)
	}
	d.items[kind] = append(d.items[kind], items...)
}

// describe renders what the registry holds for t on the reference host.
func describe(t Tool) (docItems, error) {
	d := docItems{desc: t.Description}
	plain, set := referenceHost(nil), referenceHost(docVars(t))
	// Each variable alone, so that one that takes precedence (GOBIN over GOPATH)
	// hides nothing.
	var hosts []Host
	for _, v := range docVars(t) {
		hosts = append(hosts, referenceHost([]string{v}))
	}
	var binds, moved []string
	var owns []Binding
	if t.Bindings != nil {
		for _, b := range t.Bindings(plain) {
			binds = append(binds, renderBinding(b))
			if b.Mode == Own && !slices.ContainsFunc(owns, func(o Binding) bool {
				return within(b.HomeRelativeDest, o.HomeRelativeDest)
			}) {
				owns = append(owns, b)
			}
		}
		for _, h := range hosts {
			for _, b := range t.Bindings(h) {
				if r := renderBinding(b); !slices.Contains(binds, r) && !slices.Contains(moved, r) {
					moved = append(moved, r)
				}
			}
		}
	}
	d.add("binds", binds...)
	d.add("binds with its variables set", moved...)
	states := ownStates[t.Name]
	if len(states) != len(owns) {
		return d, fmt.Errorf("tool %s has %d own directories but ownStates lists %d state functions for it", t.Name, len(owns), len(states))
	}
	for i, o := range owns {
		var items []string
		for _, s := range states[i](plain) {
			p := strings.ReplaceAll(s.Path, claudeKey(docProject), "<project>")
			if s.Dir {
				p += "/"
			}
			item := "`" + p + "`"
			if s.Shared {
				item += " shared"
			}
			items = append(items, item)
		}
		d.add("state in "+renderPath(o), items...)
	}
	d.add("env", quoted(t.Env)...)
	if t.EnvSet != nil {
		var sets []string
		for n, v := range t.EnvSet(set) {
			sets = append(sets, "`"+n+"="+v+"`")
		}
		sort.Strings(sets)
		d.add("sets", sets...)
	}
	d.add("secrets", quoted(t.Secrets)...)
	d.add("egress", quoted(t.Egress)...)
	for _, k := range t.Keys {
		d.add("keys the proxy can hold", renderKey(k))
	}
	return d, nil
}

// toolsReference is the generated part of docs/tools.md.
func toolsReference(r *Registry) (string, map[string]docItems, []string, error) {
	var b strings.Builder
	byTool := map[string]docItems{}
	var order []string
	for _, t := range r.Tools() {
		d, err := describe(t)
		if err != nil {
			return "", nil, nil, err
		}
		byTool[t.Name], order = d, append(order, t.Name)
		fmt.Fprintf(&b, "\n### %s\n\n%s\n\n", t.Name, d.desc)
		for _, k := range d.kinds {
			fmt.Fprintf(&b, "- %s: %s\n", k, strings.Join(d.items[k], "; "))
		}
	}
	return b.String(), byTool, order, nil
}

var docHeading = regexp.MustCompile(`^### (\S+)$`)

// parseReference reads the generated part back: per tool, per kind, its items.
func parseReference(s string) map[string]docItems {
	out := map[string]docItems{}
	tool := ""
	for _, line := range strings.Split(s, "\n") {
		if m := docHeading.FindStringSubmatch(line); m != nil {
			tool = m[1]
			out[tool] = docItems{}
			continue
		}
		kind, items, ok := strings.Cut(strings.TrimPrefix(line, "- "), ": ")
		if tool == "" || !strings.HasPrefix(line, "- ") || !ok {
			continue
		}
		d := out[tool]
		d.add(kind, strings.Split(items, "; ")...)
		out[tool] = d
	}
	return out
}

// TestToolsReference holds the reference in docs/tools.md, tool by tool, to the
// registry: every binding (destination, mode, optional, created), every state entry of
// an own directory, env name, variable set, secret, egress entry and held key. On a
// difference it names the tool, the item and the side that lacks it; `go test ./tools
// -run TestToolsReference -update` rewrites the part between the markers.
func TestToolsReference(t *testing.T) {
	want, wantItems, order, err := toolsReference(Default())
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	before, rest, ok1 := strings.Cut(doc, docBegin+"\n")
	got, after, ok2 := strings.Cut(rest, docEnd)
	if !ok1 || !ok2 {
		t.Fatalf("%s: the markers %q and %q are missing", docPath, docBegin, docEnd)
	}
	if *update {
		if err := os.WriteFile(docPath, []byte(before+docBegin+"\n"+want+"\n"+docEnd+after), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	gotItems := parseReference(got)
	for _, name := range order {
		d, ok := gotItems[name]
		if !ok {
			t.Errorf("%s: tool %s is in the registry but not in the doc", docPath, name)
			continue
		}
		w := wantItems[name]
		kinds := slices.Clone(w.kinds)
		for _, k := range d.kinds {
			if !slices.Contains(kinds, k) {
				kinds = append(kinds, k)
			}
		}
		for _, k := range kinds {
			for _, it := range w.items[k] {
				if !slices.Contains(d.items[k], it) {
					t.Errorf("%s: tool %s, %s: %s is in the registry but not in the doc", docPath, name, k, it)
				}
			}
			for _, it := range d.items[k] {
				if !slices.Contains(w.items[k], it) {
					t.Errorf("%s: tool %s, %s: %s is in the doc but not in the registry", docPath, name, k, it)
				}
			}
		}
	}
	for name := range gotItems {
		if _, ok := wantItems[name]; !ok {
			t.Errorf("%s: tool %s is in the doc but not in the registry", docPath, name)
		}
	}
	if !t.Failed() && strings.TrimSpace(got) != strings.TrimSpace(want) {
		t.Errorf("%s: the reference differs from the registry in order or wording; run `go test ./tools -run TestToolsReference -update` and review the diff", docPath)
	}
}

// TestToolsReferenceHostIsHome guards the reference host: a path it renders as a
// variable or an install must come from it, so no tool's real default may start so.
func TestToolsReferenceHostIsHome(t *testing.T) {
	for _, tl := range Default().Tools() {
		if tl.Bindings == nil {
			continue
		}
		h := referenceHost(nil)
		h.LookPath = nil
		for _, b := range tl.Bindings(h) {
			if p := path.Clean(b.HomeRelativeDest); strings.HasPrefix(p, ".$") || strings.HasPrefix(p, docPathHint) {
				t.Errorf("tool %s binds %q, which the reference would render as a variable or an install", tl.Name, p)
			}
		}
	}
}

// docTable returns the rows of the first Markdown table after the heading line, each
// row's cells trimmed, without the header and the rule.
func docTable(t *testing.T, doc, heading string) [][]string {
	t.Helper()
	_, rest, ok := strings.Cut(doc, "\n"+heading+"\n")
	if !ok {
		t.Fatalf("%s: no heading %q", docPath, heading)
	}
	var rows [][]string
	in := false
	for _, line := range strings.Split(rest, "\n") {
		if !strings.HasPrefix(line, "|") {
			if in {
				break
			}
			continue
		}
		in = true
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		rows = append(rows, cells)
	}
	if len(rows) < 3 {
		t.Fatalf("%s: no table under %q", docPath, heading)
	}
	return rows[2:]
}

var (
	docCode   = regexp.MustCompile("`([^`]+)`")
	docEnvVar = regexp.MustCompile(`^[A-Z][A-Z0-9_]+$`)
	docParens = regexp.MustCompile(`\([^()]*\)`) // an explanation, not a list

)

func codeSpans(s string) []string {
	var out []string
	for _, m := range docCode.FindAllStringSubmatch(s, -1) {
		out = append(out, m[1])
	}
	return out
}

// TestToolsTables holds the hand-written tables of docs/tools.md, which explain the
// registry rather than list it, to the registry where they name its items: the shared
// and own state of each own directory, each agent's API hosts and keys, and the
// variables the shell comforts follow. Each failure names the tool, the item and the
// side that lacks it.
func TestToolsTables(t *testing.T) {
	raw, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatal(err)
	}
	doc, reg := string(raw), Default()
	lookup := func(name string) Tool {
		t.Helper()
		tl, ok := reg.Lookup(name)
		if !ok {
			t.Fatalf("%s: a table names tool %s, which is not in the registry", docPath, name)
		}
		return tl
	}
	h := referenceHost(nil)
	states := func(name string) (shared, own []string) {
		for _, f := range ownStates[name] {
			for _, s := range f(h) {
				p := strings.ReplaceAll(s.Path, claudeKey(docProject), "<this project>")
				if s.Dir {
					p += "/"
				}
				if s.Shared {
					shared = append(shared, p)
				} else {
					own = append(own, p)
				}
			}
		}
		return shared, own
	}

	// What is shared, per tool: every tool with an own directory has a row; a shared
	// entry is named in the shared column ("nothing" when none), and each name in the
	// own column, outside parentheses, is state the tool keeps.
	seen := map[string]bool{}
	for _, row := range docTable(t, doc, "What is shared, per tool:") {
		name := row[0]
		lookup(name)
		seen[name] = true
		shared, own := states(name)
		cell := row[1]
		if strings.HasPrefix(cell, "nothing") != (len(shared) == 0) {
			t.Errorf("%s: tool %s, shared: the doc says %q, the registry shares %v", docPath, name, cell, shared)
		}
		for _, s := range shared {
			if !strings.Contains(cell, "`"+strings.TrimSuffix(s, "/")+"`") {
				t.Errorf("%s: tool %s, shared: `%s` is in the registry but not in the doc", docPath, name, s)
			}
		}
		for _, c := range codeSpans(docParens.ReplaceAllString(row[2], "")) {
			if !strings.HasPrefix(c, "~") && !slices.Contains(own, c) && !slices.Contains(own, c+"/") {
				t.Errorf("%s: tool %s, the sandbox's own: `%s` is in the doc but not in the registry", docPath, name, c)
			}
		}
	}
	for name := range ownStates {
		if !seen[name] {
			t.Errorf("%s: tool %s has an own directory in the registry but no row in the table of what is shared", docPath, name)
		}
	}

	// Agents: the API hosts are the tool's egress (all of them unless the cell leaves
	// the providers' out); the keys column names only its variables, every key the
	// proxy can hold, and says *proxy* where there is one.
	for _, row := range docTable(t, doc, "### Agents") {
		name := row[0]
		tl := lookup(name)
		hosts := codeSpans(row[3])
		for _, hst := range hosts {
			if !slices.Contains(tl.Egress, hst) {
				t.Errorf("%s: tool %s, API hosts: `%s` is in the doc but not in the registry", docPath, name, hst)
			}
		}
		if !strings.Contains(row[3], "the providers'") {
			for _, e := range tl.Egress {
				if !slices.Contains(hosts, e) {
					t.Errorf("%s: tool %s, API hosts: `%s` is in the registry but not in the doc", docPath, name, e)
				}
			}
		}
		vars := append(slices.Clone(tl.Env), tl.Secrets...)
		for _, c := range codeSpans(row[4]) {
			if docEnvVar.MatchString(c) && !slices.Contains(vars, c) {
				t.Errorf("%s: tool %s, keys: `%s` is in the doc but not in the registry", docPath, name, c)
			}
		}
		for _, k := range tl.Keys {
			if !strings.Contains(row[4], "`"+k.Env+"`") {
				t.Errorf("%s: tool %s, keys: `%s` (held by the proxy) is in the registry but not in the doc", docPath, name, k.Env)
			}
		}
		if strings.Contains(row[4], "*proxy*") != (len(tl.Keys) > 0) {
			t.Errorf("%s: tool %s, keys: the doc says %q, the registry's keys the proxy can hold are %v", docPath, name, row[4], KeyNames(tl.Keys))
		}
	}

	// Shell comforts: the variables named are the tool's.
	for _, row := range docTable(t, doc, "### Shell comforts") {
		tl := lookup(row[0])
		for _, c := range codeSpans(row[1] + row[2]) {
			if docEnvVar.MatchString(c) && !slices.Contains(tl.Env, c) {
				t.Errorf("%s: tool %s: `%s` is in the doc but not in the registry's env", docPath, row[0], c)
			}
		}
	}
}
