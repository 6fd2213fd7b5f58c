package container

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/devsandbox/devsandbox/internal/sh"
	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/isolator/sandboxinit/wire"
)

// The pieces of a --dry-run script (an engine's CLI invocation) every container
// backend writes the same way. Secret and passed-through values appear as names only:
// `-e NAME` takes the value from the caller's environment, and secret files are read
// from their host source by the shell.

// WriteSecretComments says where each secret comes from.
func WriteSecretComments(b *strings.Builder, secrets []isolator.Secret) {
	for _, sec := range secrets {
		switch {
		case !sec.AsFile:
			fmt.Fprintf(b, "# secret %s: environment, from the host variable %s\n", sec.Name, sec.EnvSource)
		case sec.FileSource != "":
			fmt.Fprintf(b, "# secret %s: file /run/secrets/%s (0400, tmpfs), from the host file %s\n", sec.Name, sec.Name, sec.FileSource)
		default:
			fmt.Fprintf(b, "# secret %s: file /run/secrets/%s (0400, tmpfs), from the host variable %s\n", sec.Name, sec.Name, sec.EnvSource)
		}
	}
}

// WriteHostFiles writes the commands that make the host files the container binds.
func (l *Layout) WriteHostFiles(b *strings.Builder) {
	b.WriteString("# host files the container binds (not secret):\n")
	for _, d := range l.Dirs {
		fmt.Fprintf(b, "mkdir -p -m 0700 %s\n", sh.Quote(d))
	}
	if l.EmptyFile != "" {
		fmt.Fprintf(b, "test -e %s || install -D -m 0444 /dev/null %s\n", sh.Quote(l.EmptyFile), sh.Quote(l.EmptyFile))
	}
	for _, f := range l.Files {
		WriteHostFile(b, f)
	}
}

// Who would make a mount point that is missing, for WriteMountPoints' comment.
const (
	MadeByRoot   = "an engine running as root would make them root's"
	MadeBySubUID = "podman's runtime would make them as your first subordinate uid"
)

// WriteMountPoints writes the commands that make what MakeMountPoints makes, as
// whoever runs the script: the engine would make them as another uid (madeBy says
// whose: MadeByRoot, MadeBySubUID), in a sandbox home the user then cannot remove
// as such. Each is made only where nothing is, below a parent that is no symbolic
// link: a directory, or an empty file when its bind's source is there and is not a
// directory.
func (l *Layout) WriteMountPoints(b *strings.Builder, madeBy string) {
	mps := l.mountPoints()
	if len(mps) == 0 {
		return
	}
	fmt.Fprintf(b, "# mount points inside the read-write binds, made as you (%s):\n", madeBy)
	b.WriteString(`devsandbox_mountpoint() { test -e "$1" || test -L "$1" || { mkdir -p "${1%/*}" && test "$(cd "${1%/*}" && pwd -P)" = "${1%/*}" &&` +
		` if test -n "$2" && ! test -d "$2"; then : > "$1"; else mkdir "$1"; fi; }; }` + "\n")
	for _, mp := range mps {
		if mp.source == "" {
			fmt.Fprintf(b, "devsandbox_mountpoint %s\n", sh.Quote(mp.host))
		} else {
			fmt.Fprintf(b, "devsandbox_mountpoint %s %s\n", sh.Quote(mp.host), sh.Quote(mp.source))
		}
	}
}

// WriteHostFile writes the command that makes f (rewrites it, when InPlace).
func WriteHostFile(b *strings.Builder, f HostFile) {
	if f.InPlace {
		fmt.Fprintf(b, "mkdir -p -m 0700 %s && %s\n", sh.Quote(filepath.Dir(f.Path)), Content(sh.Quote(f.Path), f.Content, f.Parts))
		return
	}
	fmt.Fprintf(b, "test -e %s || { mkdir -p -m 0700 %s && %s; }\n", sh.Quote(f.Path), sh.Quote(filepath.Dir(f.Path)), Content(sh.Quote(f.Path), f.Content, f.Parts))
}

// Content is the command that writes content to dest (a shell word). Without parts it
// is printed; with parts (isolator.ContentPart) the command reads their files, as the
// planner did, and then checks the file is content: a source missing, unreadable or
// changed since the dry run removes dest and stops the script with a message naming
// the sources, wherever the command stands in a line (after &&, before more).
func Content(dest string, content []byte, parts []isolator.ContentPart) string {
	if len(parts) == 0 {
		return "printf %s " + sh.QuoteText(string(content)) + " > " + dest
	}
	cmds := make([]string, len(parts))
	var files []string
	for i, p := range parts {
		switch {
		case p.File == "":
			cmds[i] = "printf %s " + sh.QuoteText(p.Text)
		case p.CertOnly:
			cmds[i] = "sed -n '/^-----BEGIN CERTIFICATE-----$/,/^-----END CERTIFICATE-----$/p' " + sh.Quote(p.File)
			files = append(files, "the certificate in "+p.File)
		default:
			cmds[i] = "cat " + sh.Quote(p.File)
			files = append(files, p.File)
		}
	}
	sum := sha256.Sum256(content)
	msg := fmt.Sprintf("devsandbox: %s is missing or changed since this dry run: run --dry-run again", strings.Join(files, " or "))
	// One group, its failure handled inside it: a source that cannot be read fails the
	// redirection's group as a changed one fails the check, and either stops the
	// script (no set -e there; and a failure left of && would not stop it anyway).
	return fmt.Sprintf("{ { { %s; } > %s &&\n  test \"$( (sha256sum || shasum -a 256) < %s 2>/dev/null | cut -c1-64)\" = %s; } ||\n  { rm -f %s; echo %s >&2; exit 1; }; }",
		strings.Join(cmds, " && "), dest, dest, hex.EncodeToString(sum[:]), dest, sh.Quote(msg))
}

// WriteEnv writes the command's environment and secrets as -e flags.
func (l *Layout) WriteEnv(w *ArgWriter) {
	for _, e := range l.Env {
		if e.FromHost {
			w.Flag("-e", e.Name)
		} else {
			w.Flag("-e", e.Name+"="+e.Value)
		}
	}
	for _, sec := range l.Secrets {
		switch {
		case !sec.AsFile && sec.EnvSource == sec.Name:
			w.Flag("-e", sec.Name)
		case !sec.AsFile:
			w.Raw("-e", sec.Name+`="$`+sec.EnvSource+`"`)
		case sec.FileSource != "":
			w.Raw("-e", wire.SecretFileEnvPrefix+sec.Name+`="$(base64 -w0 < `+sh.Quote(sec.FileSource)+`)"`)
		default:
			w.Raw("-e", wire.SecretFileEnvPrefix+sec.Name+`="$(printf %s "$`+sec.EnvSource+`" | base64 -w0)"`)
		}
	}
}

// PlainArgs drops --framed from the init's arguments: a hand-run command has no one
// speaking the protocol. It drops wire.UnsetGOMAXPROCSArg before the command too: the
// hand-run line adds no GOMAXPROCS=1 for the init to remove.
func PlainArgs(args []string) []string {
	var out []string
	cmd := false
	for _, a := range args {
		if a != "--framed" && (cmd || a != wire.UnsetGOMAXPROCSArg) {
			out = append(out, a)
		}
		cmd = cmd || a == "--"
	}
	return out
}

// ArgWriter writes a shell command line, one flag per continuation line.
type ArgWriter struct {
	b *strings.Builder
	n int
}

// NewArgWriter returns a writer appending to b.
func NewArgWriter(b *strings.Builder) *ArgWriter { return &ArgWriter{b: b} }

func (w *ArgWriter) sep(newline bool) {
	if w.n > 0 {
		if newline {
			w.b.WriteString(" \\\n  ")
		} else {
			w.b.WriteByte(' ')
		}
	}
	w.n++
}

// Word writes words on one line, starting a continuation line unless it is the first.
func (w *ArgWriter) Word(words ...string) {
	for i, s := range words {
		w.sep(i == 0)
		w.b.WriteString(sh.Quote(s))
	}
}

// Flag writes name with each value on a line of its own; with no value, name alone.
func (w *ArgWriter) Flag(name string, values ...string) {
	if len(values) == 0 {
		w.sep(true)
		w.b.WriteString(name)
	}
	for _, v := range values {
		w.sep(true)
		w.b.WriteString(name + " " + sh.Quote(v))
	}
}

// Raw writes a flag whose value is shell syntax to be expanded, not quoted.
func (w *ArgWriter) Raw(name, value string) {
	w.sep(true)
	w.b.WriteString(name + " " + value)
}
