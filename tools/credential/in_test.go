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
		// a URL's query, alone or as a setting's value: by the parameter's name.
		{"presigned URL", "  - https://acct.blob.core.windows.net/c/b?sv=2022-11-02&sig=abcdEF12\n", []string{"a value (line 1)"}},
		{"query in json", `{"mcpServers": {"x": {"url": "https://mcp.example/sse?api_key=opaque"}}}`, []string{"url (line 1)"}},
		{"query in shell", "curl -s \"https://h/x?key=opaque1&q=1\"\n", []string{"a value (line 1)"}},
		{"jwt", "NOTE = \"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.dBjftJeZ4CVPmB92K27uhbUJU1p1r_wW1gFWFOEjXk\"\n", []string{"NOTE (line 1)"}},
		{"smtp password", "smtpPass = hunter2\nDB_PASS=opaque\n", []string{"smtpPass (line 1)", "DB_PASS (line 2)"}},
		// references in the syntaxes of the files sent: shell's and compose's,
		// VS Code's ${env:X}, templates, Python's configparser, Home Assistant's
		// !secret, 1Password's op://; an escaped $$ is no reference.
		{"references", "DB_PASSWORD: ${DB_PASSWORD}\nexport API_TOKEN=$API_TOKEN\n\"token\": \"${env:GH_TOKEN}\"\npassword = {{ secret }}\n" +
			"password = %(db_password)s\npassword: !secret db_password\nAPI_TOKEN = \"op://dev/gh/token\"\n", nil},
		{"escaped dollar", "DB_PASSWORD='pa$$word'\n", []string{"DB_PASSWORD (line 1)"}},
		// placeholders a template leaves for the user, and empty values.
		{"placeholders", "password: \"<your password>\"\ntoken: '********'\nAPI_KEY=xxxxxxxx\nsecret = ...\n", nil},
		{"empty values", "DB_PASSWORD=\nexport API_TOKEN=\"\"\npassword:\nsecret = ''\n", nil},
		// an HTTP Authorization's credential follows its scheme.
		{"authorization", "Authorization: Bearer opaque\n", []string{"Authorization (line 1)"}},
		{"authorization reference", "headers:\n  Authorization: Bearer ${API_TOKEN}\n  X-Trace: 1\n", nil},
		// a dev password is a literal: the judgement cannot tell it from a real one.
		{"dev password", "services:\n  db:\n    environment:\n      DB_PASSWORD: devpass\n", []string{"DB_PASSWORD (line 4)"}},
		// a password on a command line, after a blank: the commands that take one
		// (named with the option), and an option named like a credential.
		{"sshpass", "alias deploy='sshpass -p hunter2 ssh deploy@h'\nsshpass -phunter2 scp a h:\n", []string{"sshpass -p (line 1)", "sshpass -p (line 2)"}},
		{"mysql", "mysql -u root -pSECRET db\nmysqldump --password=hunter2 db\n", []string{"mysql -p (line 1)", "--password (line 2)"}},
		{"curl", "curl -u me:hunter2 https://h/\ncurl --user 'me:hunter2' https://h/\n", []string{"curl -u (line 1)", "curl --user (line 2)"}},
		{"redis", "redis-cli -h cache -a hunter2 ping\n", []string{"redis-cli -a (line 1)"}},
		{"long option", "deploy --password hunter2\ntool --api-key opaque1 --verbose\n", []string{"--password (line 1)", "--api-key (line 2)"}},
		{"json arguments", `{"command": "sshpass", "args": ["-p", "hunter2", "ssh", "h"]}` + "\n" + `{"args": ["--token", "opaque1"]}` + "\n", []string{"sshpass -p (line 1)", "--token (line 2)"}},
		{"openssl", "openssl pkcs12 -export -in c.pem -passout pass:hunter2 -out c.p12\nopenssl rsa -in k.pem -passin env:KEY_PASS\n", []string{"openssl -passout (line 1)"}},
		{"option specifications", "docker build --secret id=npm,src=.npmrc .\ntool --token abc123def456==\n", []string{"--token (line 2)"}},
		{"pgpassword", "PGPASSWORD=hunter2 psql -h db\n", []string{"PGPASSWORD (line 1)"}},
		{"command line references", "sshpass -p \"$SSHPASS\" ssh h\nmysql -u root -p db\ncurl -u \"$U:$P\" https://h/\ncurl -u me https://h/\n" +
			"redis-cli -a \"${REDIS_PASS}\"\ntool --password-file ./pw --token-ttl 3600\n", nil},
		// a short query parameter with a password.
		{"short query key", `{"url": "https://mcp.example/sse?k=hunter2"}`, []string{"url (line 1)"}},
		// a '$' inside a longer literal, followed by a lower-case word, outside a
		// shell file: no reference.
		{"dollar in a literal", "[env]\nDB_PASSWORD = \"pa$word\"\n", []string{"DB_PASSWORD (line 2)"}},
		// an unquoted placeholder, an example's "your_…".
		{"unquoted placeholder", "password: <your password>\npassword = <YOUR DB PASSWORD HERE>\nAPI_TOKEN=your_token_here\n", nil},
		{"ordinary words", "[tool]\nname = \"SG.StrategyGroup.Config.Loader\"\nhost = hvs.example.internal.host\n", nil},
	} {
		if got := In([]byte(tc.text), Text); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// A file's syntax decides what a '$' is: shell files by name or "#!" line, every
// other file text.
func TestSyntaxOf(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		want       Syntax
	}{
		{"/p/.envrc", "export A=1\n", Shell},
		{"/p/scripts/deploy.sh", "", Shell},
		{"/home/u/.bashrc", "", Shell},
		{"/p/.git/hooks/pre-commit", "#!/bin/sh\nexit 0\n", Shell},
		{"/p/bin/run", "#!/usr/bin/env bash\n", Shell},
		{"/p/bin/run.py", "#!/usr/bin/env python3\n", Text},
		{"/p/mise.toml", "[env]\n", Text},
		{"/p/.env", "A=1\n", Text},
		{"/p/.mcp.json", "", Text},
	} {
		if got := SyntaxOf(tc.name, []byte(tc.text)); got != tc.want {
			t.Errorf("SyntaxOf(%s): %v, want %v", tc.name, got, tc.want)
		}
	}
}

// In a shell file a '$' before a letter is a reference wherever it is: pa$word
// is "pa" and $word's value, and so on a command line.
func TestCredentialsInShell(t *testing.T) {
	text := "export DB_PASSWORD=\"pa$word\"\nsshpass -p \"pa$word\" ssh h\nexport GH_TOKEN=opaque\n"
	if got, want := In([]byte(text), Shell), []string{"GH_TOKEN (line 3)"}; !reflect.DeepEqual(got, want) {
		t.Errorf("In(Shell): %q, want %q", got, want)
	}
	if got, want := In([]byte(text), Text), []string{"DB_PASSWORD (line 1)", "sshpass -p (line 2)", "GH_TOKEN (line 3)"}; !reflect.DeepEqual(got, want) {
		t.Errorf("In(Text): %q, want %q", got, want)
	}
}
