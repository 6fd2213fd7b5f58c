package credential

import "testing"

func TestCredentialName(t *testing.T) {
	yes := []string{
		"API_TOKEN", "GH_TOKEN", "NODE_AUTH_TOKEN", "ANTHROPIC_AUTH_TOKEN", "DB_PASSWORD", "PGPASSWORD", "MYSQL_PWD_PASSWD",
		"AWS_SECRET_ACCESS_KEY", "CLIENT_SECRET", "AWS_SESSION_TOKEN", "OPENAI_API_KEY", "MY_APIKEY", "SSH_PRIVATE_KEY",
		"GPG_PASSPHRASE", "GOOGLE_APPLICATION_CREDENTIALS", "DOCKER_CREDENTIAL", "BASIC_AUTH", "NPM_CONFIG__AUTH",
		"npm_config_//registry.npmjs.org/:_authToken", "api_token", "SLACK_TOKENS", "APP_SECRETS", "DJANGO_SECRETKEY",
		"Authorization", "Proxy-Authorization",
	}
	no := []string{
		"PATH", "HOME", "LANG", "TERM", "GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "TOKENIZERS_PARALLELISM", "SSH_AUTH_SOCK",
		"ssh_auth_sock", "KEYBOARD", "MONKEY", "PUBLIC_KEY", "AWS_ACCESS_KEY_ID", "GH_CONFIG_DIR", "AUTHOR", "BUILD_MODE", "",
	}
	for _, n := range yes {
		if !Name(n) {
			t.Errorf("%s: not judged a credential's name", n)
		}
	}
	for _, n := range no {
		if Name(n) {
			t.Errorf("%s: judged a credential's name", n)
		}
	}
}

func TestCredentialValue(t *testing.T) {
	const tail = "0123456789abcdefXYZ"
	yes := []string{
		"ghp_" + tail, "gho_" + tail, "github_pat_11AB_" + tail, "glpat-" + tail, "sk-" + tail, "sk-ant-api03-" + tail,
		"xoxb-123-" + tail, "xapp-1-" + tail, "AKIAIOSFODNN7EXAMPLE", "AIzaSyA-" + tail, "npm_" + tail, "hf_" + tail,
		" ghp_" + tail + "\n",
		"-----BEGIN OPENSSH PRIVATE KEY-----\nb3Blbn\n-----END OPENSSH PRIVATE KEY-----\n",
		"https://user:pa55@proxy.example:3128", "https://proxy.golang.org,https://me:tok@goproxy.corp,direct",
		"https://ghp_" + tail + "@github.com/o/r.git",
	}
	no := []string{
		"", "fast", "C.UTF-8", "sk-SK", "sk_SK.UTF-8", "ghp_short", "npm_config", "AKIA", "/home/me/.config/gh",
		"ghp_" + tail + " and more words", "https://proxy.example:3128", "https://user@proxy.example", "me@example.com",
		"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n",
	}
	for _, v := range yes {
		if !Value(v) {
			t.Errorf("%q: not judged a credential's value", v)
		}
	}
	for _, v := range no {
		if Value(v) {
			t.Errorf("%q: judged a credential's value", v)
		}
	}
}
