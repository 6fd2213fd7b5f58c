package credential

import "testing"

func TestCredentialName(t *testing.T) {
	yes := []string{
		"API_TOKEN", "GH_TOKEN", "NODE_AUTH_TOKEN", "ANTHROPIC_AUTH_TOKEN", "DB_PASSWORD", "PGPASSWORD", "MYSQL_PWD_PASSWD",
		"AWS_SECRET_ACCESS_KEY", "CLIENT_SECRET", "AWS_SESSION_TOKEN", "OPENAI_API_KEY", "MY_APIKEY", "SSH_PRIVATE_KEY",
		"GPG_PASSPHRASE", "GOOGLE_APPLICATION_CREDENTIALS", "DOCKER_CREDENTIAL", "BASIC_AUTH", "NPM_CONFIG__AUTH",
		"npm_config_//registry.npmjs.org/:_authToken", "api_token", "SLACK_TOKENS", "APP_SECRETS", "DJANGO_SECRETKEY",
		"Authorization", "Proxy-Authorization",
		// git's sendemail.smtpPass and imap.pass (git lowercases a variable's name),
		// a password's short spellings, Azure's connection-string keys.
		"smtppass", "sendemail.smtpPass", "imap.pass", "DB_PASS", "REDIS_PASS", "MYSQL_PWD", "DB_PWD", "AccountKey",
		"SharedAccessKey",
	}
	no := []string{
		"PATH", "HOME", "LANG", "TERM", "GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "TOKENIZERS_PARALLELISM", "SSH_AUTH_SOCK",
		"ssh_auth_sock", "KEYBOARD", "MONKEY", "PUBLIC_KEY", "AWS_ACCESS_KEY_ID", "GH_CONFIG_DIR", "AUTHOR", "BUILD_MODE", "",
		// the working directory's variables, words that end in PASS, PASS not the last
		// word, and git's variables that hold no secret (a user name, a cookie
		// file's or a key's path, a signing key's id).
		"PWD", "OLDPWD", "BYPASS", "CACHE_BYPASS", "COMPASS", "PASS_THROUGH", "FIRST_PASS_MODE", "PASSTHROUGH",
		"username", "cookieFile", "sshCommand", "signingKey", "key", "sig",
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
		// more tokens' prefixes: GitLab's deploy, runner, trigger, OAuth and CI job
		// tokens, Stripe's, Docker Hub's, PyPI's, DigitalOcean's, Vault's, Google's
		// OAuth access tokens, SendGrid's, Shopify's, age's secret keys, Slack's
		// refresh tokens, Linear's, Sentry's, Grafana's, Postman's.
		"gldt-" + tail, "glrt-" + tail, "glptt-" + tail, "gloas-" + tail, "glcbt-" + tail, "sk_live_" + tail,
		"rk_live_" + tail, "sk_test_" + tail, "dckr_pat_" + tail, "pypi-AgEIcHlwaS5vcmc" + tail, "dop_v1_" + tail,
		"ya29." + tail, "shpat_" + tail, "AGE-SECRET-KEY-1" + tail, "xoxe.xoxp-1-" + tail,
		"lin_api_" + tail, "sntrys_" + tail, "glsa_" + tail, "PMAK-" + tail,
		// a JWT (three base64url parts, the first two JSON objects).
		"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.dBjftJeZ4CVPmB92K27uhbUJU1p1r_wW1gFWFOEjXk",
		// a URL carrying a credential in its query or fragment: a token's or a
		// password's parameter by its name, an API key (?key=), a presigned URL's
		// signature (Azure's sig=, S3's and GCS's X-…-Signature).
		"https://git.example/o/r.git?private_token=" + tail, "https://api.example/v1?access_token=opaque1",
		"https://h/login?user=me&password=hunter2", "https://maps.example/api/js?key=opaque1&v=3",
		"https://acct.blob.core.windows.net/c/b?sv=2022-11-02&sp=r&sig=abc%2Bdef%3D",
		"https://b.s3.amazonaws.com/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Signature=0a1b2c",
		"https://storage.googleapis.com/b/o?X-Goog-Signature=0a1b2c", "https://app.example/cb#access_token=opaque1&x=1",
		"https://proxy.golang.org,https://goproxy.corp/?token=opaque1,direct",
		// a URL that is itself the credential: Slack's and Discord's webhooks.
		"https://hooks.slack.com/services/T0000/B0000/" + tail, "https://discord.com/api/webhooks/123/" + tail,
		// a short parameter that holds a password, a key or a token in a URL, with a
		// secret-shaped value (a letter and a digit or one of "+/=", 6 characters or
		// more); pw, tok and auth by their name alone.
		"https://h/x?k=hunter2", "https://h/x?p=hunter2", "https://h/x?t=a8Fk29xQ", "https://h/x?pw=hunter2",
		"https://h/x?tok=opaque", "https://h/x?auth=opaque", "https://h/x?pass=opaque",
		// the real shapes of the prefixes that begin ordinary words too: SendGrid's
		// (22 and 43 characters), Vault's (24 or more, a digit), AWS's (16 upper-case
		// letters and digits), OpenAI's (20 or more, a digit).
		"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",
		"hvs.CAESIJk9RW1v6x0Hq3pU0ZbK8wUXx7cGQ0", "AKIAIOSFODNN7EXAMPLE", "ASIAY34FZKBOKMUTVV7A",
	}
	no := []string{
		"", "fast", "C.UTF-8", "sk-SK", "sk_SK.UTF-8", "ghp_short", "npm_config", "AKIA", "/home/me/.config/gh",
		"ghp_" + tail + " and more words", "https://proxy.example:3128", "https://user@proxy.example", "me@example.com",
		"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n",
		"SG.", "hvs.short", "sk_live_", "eyJhbGciOiJIUzI1NiJ9", "a.b.c", "eyJ.eyJ.x", "v1.2.3-rc.1",
		// query parameters that hold no credential, an empty one, a reference, a
		// placeholder.
		"https://h/search?q=token&page=2", "https://h/p?keyword=x&sort_key=name", "https://pkg.go.dev/net/url?tab=doc",
		"https://h/p?token=", "https://h/p?token=$GH_TOKEN", "https://h/p?token=${GH_TOKEN}", "https://h/p?key=%7B%7Bkey%7D%7D",
		"https://h/p?token_ttl=3600&signed=true", "https://h/p?sig=<signature>", "https://hooks.slack.com/", "https://discord.com/api/",
		// short or key-like parameters whose value is no secret's shape: a page, a
		// theme, a duration, a word, an example's placeholder.
		"https://h/x?p=2", "https://h/x?t=dark", "https://youtu.be/x?t=1h02m30s", "https://h/x?k=v", "https://h/docs?key=value",
		"https://h/docs?key=name&sort=asc", "https://h/x?sig=verified", "https://maps.googleapis.com/maps/api/js?key=YOUR_API_KEY",
		"https://h/x?token=YOUR_TOKEN", "https://h/x?api_key=your-api-key",
		// ordinary words that begin like a token: a dotted name, a library's name,
		// an upper-case identifier.
		"SG.StrategyGroup.Config.Loader", "hvs.example.internal.host", "hvs.HighVoltageSwitchgearPanel",
		"sk-learn-contrib-imbalanced", "ASIA_PACIFIC_SOUTHEAST", "ASIAPACIFICSOUTHEASTREGION",
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
