package keytable

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func TestRead(t *testing.T) {
	doc := "# Config\n\n" +
		"| a | b |\n|---|---|\n| not | this |\n\n" +
		"| key | type | flag | project |\n" +
		"|---|---|---|---|\n" +
		"| `x` | `a` \\| `b` | `--x` | any |\n" +
		"|`y`|| |no|\n" +
		"after the table\n" +
		"| `z` | outside | | any |\n"
	path := filepath.Join(t.TempDir(), "c.md")
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	rows, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	want := []Row{
		{Line: 9, Text: "| `x` | `a` \\| `b` | `--x` | any |", Cells: []string{"`x`", "`a` \\| `b`", "`--x`", "any"}},
		{Line: 10, Text: "|`y`|| |no|", Cells: []string{"`y`", "", "", "no"}},
	}
	if !reflect.DeepEqual(rows, want) {
		t.Errorf("Read:\n got %+v\nwant %+v", rows, want)
	}
}

func TestReadNoTable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.md")
	if err := os.WriteFile(path, []byte("| keys | x |\n|---|---|\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if rows, err := Read(path); err == nil {
		t.Errorf("Read of a page without a key table: %+v, want an error", rows)
	}
	if _, err := Read(filepath.Join(t.TempDir(), "missing.md")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Read of a missing file: %v, want fs.ErrNotExist", err)
	}
}
