package helper

import (
	"strings"
	"testing"
	"time"
)

// TestWriteTableEscapes: a name a project's directory gave (or a label a container
// carries) shows as its escapes, on its own row, in its own column; a home size that
// is a lower bound says so.
func TestWriteTableEscapes(t *testing.T) {
	var b strings.Builder
	err := WriteTable(&b, []Sandbox{{
		Name: "p\x1b]0;x\a\u009b\u202e\nDEVSANDBOX: all clear\t-1234", Dir: "/p/\ttab", DirExists: true,
		Containers: []string{"c\u2028"}, Volumes: []string{"v\r"},
		Home: "/h", HomeSize: 3 << 30, HomeSizeBound: true, HomeSizeStop: "stopped after 100000 entries",
		LastUsed: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
	}})
	if err != nil {
		t.Fatal(err)
	}
	want := "NAME                                                         PROJECT     CONTAINER   VOLUME  HOME                                   LAST USED\n" +
		`p\x1b]0;x\x07\u009b\u202e\x0aDEVSANDBOX: all clear\x09-1234  /p/\x09tab  c\u2028 0B  v\x0d   ≥ 3.0G (stopped after 100000 entries)  2026-01-02 03:04:05` + "\n"
	if got := b.String(); got != want {
		t.Errorf("WriteTable =\n%s\nwant\n%s", got, want)
	}
}

// TestWriteTableAllContainers: a project's row names each of its containers (the kept
// one and its companion), not the first the engine listed.
func TestWriteTableAllContainers(t *testing.T) {
	var b strings.Builder
	err := WriteTable(&b, []Sandbox{{Name: "p-0123abcd", Dir: "/p", DirExists: true,
		Containers: []string{"devsandbox-p-0123abcd-px", "devsandbox-p-0123abcd"}, ContainerSize: 2048, Running: true,
		Volumes: []string{"devsandbox-p-0123abcd-home"}}})
	if err != nil {
		t.Fatal(err)
	}
	want := "NAME        PROJECT  CONTAINER                                                    VOLUME                      HOME  LAST USED\n" +
		"p-0123abcd  /p       devsandbox-p-0123abcd,devsandbox-p-0123abcd-px 2.0K running  devsandbox-p-0123abcd-home  -     -\n"
	if got := b.String(); got != want {
		t.Errorf("WriteTable =\n%s\nwant\n%s", got, want)
	}
}
