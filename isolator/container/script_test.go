package container

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/devsandbox/devsandbox/isolator"
)

// TestContentFromParts runs the command Content writes, with sh: from parts it reads
// the host files (the whole bundle, the certificate alone of the CA's file) and makes
// the planned content, printing neither; when a source changed since, it removes what
// it wrote and stops the script, naming the sources.
func TestContentFromParts(t *testing.T) {
	dir := t.TempDir()
	const system = "-----BEGIN CERTIFICATE-----\nSYSTEM\n-----END CERTIFICATE-----"
	const cert = "-----BEGIN CERTIFICATE-----\nPROJECT\n-----END CERTIFICATE-----\n"
	const key = "-----BEGIN PRIVATE KEY-----\nKEYBYTES\n-----END PRIVATE KEY-----\n"
	sys, ca := filepath.Join(dir, "bundle.crt"), filepath.Join(dir, "proxy-ca.pem")
	write := func(f, s string) {
		if err := os.WriteFile(f, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(sys, system)
	write(ca, cert+key)
	content := []byte(system + "\n" + cert)
	parts := []isolator.ContentPart{{File: sys}, {Text: "\n"}, {File: ca, CertOnly: true}}
	dest := filepath.Join(dir, "out.pem")
	cmd := Content(dest, content, parts) + "\necho done"
	for _, leak := range []string{"SYSTEM", "PROJECT", "KEYBYTES"} {
		if strings.Contains(cmd, leak) {
			t.Fatalf("the command prints %s:\n%s", leak, cmd)
		}
	}
	sh := func() (string, error) {
		out, err := exec.Command("/bin/sh", "-c", cmd).CombinedOutput()
		return string(out), err
	}
	if out, err := sh(); err != nil || out != "done\n" {
		t.Fatalf("%v: %s\n%s", err, out, cmd)
	}
	if got, _ := os.ReadFile(dest); string(got) != string(content) {
		t.Fatalf("wrote %q, want %q", got, content)
	}
	write(sys, system+"\n# one more\n")
	out, err := sh()
	if err == nil || strings.Contains(out, "done") || !strings.Contains(out, "devsandbox: "+sys+" or the certificate in "+ca+" is missing or changed since this dry run") {
		t.Fatalf("a changed source: %v\n%s", err, out)
	}
	if _, err := os.Stat(dest); !os.IsNotExist(err) {
		t.Errorf("the changed file is left: %v", err)
	}
	// A source gone since the dry run: cat fails, and the script must stop there too,
	// not go on to the engine with what the redirection left (an empty file, which a
	// later run's `test -e` would then take as made).
	write(sys, system)
	if out, err := sh(); err != nil || out != "done\n" {
		t.Fatalf("restored: %v: %s", err, out)
	}
	if err := os.Remove(sys); err != nil {
		t.Fatal(err)
	}
	out, err = sh()
	if err == nil || strings.Contains(out, "done") || !strings.Contains(out, "devsandbox: "+sys+" or the certificate in "+ca+" is missing or changed since this dry run") {
		t.Fatalf("a missing source: %v\n%s", err, out)
	}
	if _, err := os.Stat(dest); !os.IsNotExist(err) {
		t.Errorf("with a source missing, the file is left: %v", err)
	}
	// As WriteHostFile and the derived image's lines use it: between && and before
	// more of the line.
	line := "true && " + Content(dest, content, parts) + " && echo chained\necho done"
	b, err := exec.Command("/bin/sh", "-c", line).CombinedOutput()
	if out = string(b); err == nil || strings.Contains(out, "done") || strings.Contains(out, "chained") {
		t.Fatalf("a missing source, within a line: %v\n%s", err, out)
	}
	if got := Content(dest, []byte("a'b\n"), nil); got != `printf %s 'a'\''b
' > `+dest {
		t.Errorf("without parts: %s", got)
	}
}
