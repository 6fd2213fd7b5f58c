package credential

import (
	"strings"
	"testing"
)

// benchFile is a project file sent by content (an .envrc with a command line, a
// URL and references): In runs over each such file once a launch over plain TCP
// to another machine.
var benchFile = []byte(strings.Repeat("export BUILD_MODE=fast\nexport DB_PASSWORD=\"${DB_PASSWORD_DEV}\"\n"+
	"alias db='mysql -u root -h db app'\ncurl -s \"https://api.example/v1/items?page=2&sort=name\" | jq .\n", 10))

// BenchmarkIn is the judgement of one such file (40 lines).
func BenchmarkIn(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		In(benchFile, Shell)
	}
}
