package tools

// The API keys of the model providers, as the tools send them (see Key). A tool that
// reads a provider's key declares it with the variable that moves its endpoint, if any.

// anthropicKeys are Anthropic's API key (x-api-key) and a bearer token for a gateway
// or the API (ANTHROPIC_AUTH_TOKEN), both sent to the Messages API.
func anthropicKeys(baseURLEnv string) []Key {
	return []Key{
		{Env: "ANTHROPIC_API_KEY", Header: "x-api-key", Host: "api.anthropic.com", BaseURLEnv: baseURLEnv},
		{Env: "ANTHROPIC_AUTH_TOKEN", Header: "Authorization", Format: "Bearer {}", Host: "api.anthropic.com", BaseURLEnv: baseURLEnv},
	}
}

// bearer is a key sent as "Authorization: Bearer <key>", as OpenAI's API and the
// OpenAI-compatible ones take it.
func bearer(env, host, baseURLEnv string) Key {
	return Key{Env: env, Header: "Authorization", Format: "Bearer {}", Host: host, BaseURLEnv: baseURLEnv}
}

// geminiKeys are the Gemini API's keys, which Google's GenAI SDK sends in
// x-goog-api-key (GOOGLE_API_KEY wins when both are set).
func geminiKeys(baseURLEnv string) []Key {
	return []Key{
		{Env: "GEMINI_API_KEY", Header: "x-goog-api-key", Host: "generativelanguage.googleapis.com", BaseURLEnv: baseURLEnv},
		{Env: "GOOGLE_API_KEY", Header: "x-goog-api-key", Host: "generativelanguage.googleapis.com", BaseURLEnv: baseURLEnv},
	}
}

// KeyNames returns the variables of keys.
func KeyNames(keys []Key) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = k.Env
	}
	return out
}
