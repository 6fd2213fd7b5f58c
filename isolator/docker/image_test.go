package docker

import (
	"errors"
	"strings"
	"testing"
)

// TestBuildProgressEscapes: the build stream relays what the base image's programs
// print; its lines stay lines and every other character a terminal acts on shows as
// its escape; a status is one line; an error fails the build.
func TestBuildProgressEscapes(t *testing.T) {
	in := `{"stream":"Step 1/2 : FROM b\n"}
{"stream":"m\u001b]0;owned\u0007\u009b2K\u202e\r\nDEVSANDBOX: all clear\n"}
{"status":"Pulling \u001b[2K","progress":"[=>  ]\n1"}
{"stream":"Successfully built 0123\n"}
`
	var out strings.Builder
	if err := buildProgress(strings.NewReader(in), &out); err != nil {
		t.Fatal(err)
	}
	want := "Step 1/2 : FROM b\n" +
		`m\x1b]0;owned\x07\u009b2K\u202e\x0d` + "\nDEVSANDBOX: all clear\n" +
		`Pulling \x1b[2K [=>  ]\x0a1` + "\n" +
		"Successfully built 0123\n"
	if out.String() != want {
		t.Errorf("relayed\n%q\nwant\n%q", out.String(), want)
	}
	err := buildProgress(strings.NewReader(`{"error":"bad \u001b]0;x\u0007"}`), &out)
	if err == nil || !strings.Contains(err.Error(), "the image build failed") || errors.Unwrap(err) != nil {
		t.Errorf("an error message: %v", err)
	}
}
