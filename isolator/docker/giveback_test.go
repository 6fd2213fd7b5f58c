package docker

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"strings"
	"testing"
)

// The archive names each entry root owns, parents first, as the user's: a directory
// as a directory (its content stays), a file as an empty file.
func TestGiveBackTar(t *testing.T) {
	b := giveBackTar([]rootEntry{{rel: "it-1", dir: true}, {rel: "it-1/other", dir: true}, {rel: "it-1/other/.env"}}, 1000, 1001)
	tr := tar.NewReader(bytes.NewReader(b))
	var got []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprintf("%c %s %o %d:%d %d", h.Typeflag, h.Name, h.Mode, h.Uid, h.Gid, h.Size))
	}
	want := "5 it-1/ 700 1000:1001 0\n5 it-1/other/ 700 1000:1001 0\n0 it-1/other/.env 600 1000:1001 0"
	if s := strings.Join(got, "\n"); s != want {
		t.Fatalf("archive:\n%s\nwant:\n%s", s, want)
	}
}
