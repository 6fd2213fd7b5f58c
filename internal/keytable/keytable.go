// Package keytable reads the key table of docs/configuration.md, for the tests that
// hold it to the code: config's (every schema key documented, nothing else, and the
// "in a project file" column as checkProject has it) and cmd/devsandbox's (the
// "flag / env" column names the CLI's flags). One parser, so the two cannot disagree
// about what the table says.
package keytable

import (
	"bufio"
	"fmt"
	"os"
	"strings"
)

// header starts the table's header row.
const header = "| key |"

// Row is one row of the table below the header and its separator.
type Row struct {
	Line  int      // 1-based, in the file
	Text  string   // the row as written
	Cells []string // trimmed, split on each "|" not escaped as `\|` (which stays as written)
}

// Read returns the rows of the table in the Markdown file at path: the lines starting
// with "|" after the header row (one starting "| key |"), up to the first that does
// not. It fails when the file has no such header row.
func Read(path string) ([]Row, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading the key table: %w", err)
	}
	defer f.Close()
	var rows []Row
	found, inTable := false, false
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, header):
			found, inTable = true, true
			continue
		case !strings.HasPrefix(line, "|"):
			inTable = false
		}
		if !inTable || strings.HasPrefix(line, "|---") {
			continue
		}
		rows = append(rows, Row{Line: n, Text: line, Cells: cells(line)})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading the key table of %s: %w", path, err)
	}
	if !found {
		return nil, fmt.Errorf("no key table (a header row starting %q) in %s", header, path)
	}
	return rows, nil
}

// cells splits a Markdown table row on each "|" not escaped as `\|`.
func cells(row string) []string {
	const esc = "\x00"
	row = strings.ReplaceAll(strings.TrimSpace(row), `\|`, esc)
	cells := strings.Split(strings.TrimSuffix(strings.TrimPrefix(row, "|"), "|"), "|")
	for i, c := range cells {
		cells[i] = strings.TrimSpace(strings.ReplaceAll(c, esc, `\|`))
	}
	return cells
}
