package credential

import (
	"reflect"
	"testing"
)

// In finds a setting by its name and a literal value, or by its value's
// form, in the syntaxes of the files a remote engine is sent by content; it names
// the setting and the line, never the value, and leaves alone references,
// booleans, numbers and certificates.
func TestCredentialsIn(t *testing.T) {
	const tok = "ghp_0123456789abcdefXYZ"
	for _, tc := range []struct {
		name, text string
		want       []string
	}{
		{".envrc", "export BUILD_MODE=fast\nexport GH_TOKEN=opaque\n", []string{"GH_TOKEN (line 2)"}},
		{"shell reference", "export GH_TOKEN=$(cat ~/.token)\nexport API_TOKEN=\"${VAULT_TOKEN}\"\n", nil},
		{".npmrc", "registry=https://registry.npmjs.org/\n//registry.npmjs.org/:_authToken=opaque\n", []string{"_authToken (line 2)"}},
		{"json", `{"mcpServers": {"gh": {"env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "opaque", "DEBUG": "1"}}}}`, []string{"GITHUB_PERSONAL_ACCESS_TOKEN (line 1)"}},
		{"yaml", "npmRegistryServer: \"https://npm.example\"\nnpmAuthToken: opaque\n", []string{"npmAuthToken (line 2)"}},
		{"yaml list", "openai-api-key: opaque\n", []string{"openai-api-key (line 1)"}},
		{"toml", "[env]\nNOTE = 'deploy with " + tok + "'\n", []string{"a value (line 2)"}},
		{"value by form", "[settings]\nproxy = \"https://me:pw@proxy.example:3128\"\n", []string{"proxy (line 2)"}},
		{"url alone", "  https://me:pw@proxy.example:3128\n", []string{"a value (line 1)"}},
		{"paths", "export GOOGLE_APPLICATION_CREDENTIALS=./sa.json\ntoken_file: ~/.config/tok\nSECRETS_DIR=/run/secrets\n", nil},
		{"token as a URL's user", "git clone https://" + tok + "@github.com/o/r.git\n", []string{"a value (line 1)"}},
		{"booleans and numbers", "[tools.gh]\nsecrets = true\ntoken_ttl = 3600\npassword = \"\"\n", nil},
		{"no credential", "[core]\nurl = https://git.example.test/r.git\nkey = value\n", nil},
		{"private key", "-----BEGIN OPENSSH PRIVATE KEY-----\nb3Blbn\n-----END OPENSSH PRIVATE KEY-----\n", []string{"a PEM private key"}},
		{"certificate", "-----BEGIN CERTIFICATE-----\nAKIA0123456789ABCDEFGH\n-----END CERTIFICATE-----\n", nil},
		{"ssh config", "Host *\n  User git\n  IdentityFile ~/.ssh/id_ed25519\n", nil},
	} {
		if got := In([]byte(tc.text)); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
