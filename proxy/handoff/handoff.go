// Package handoff is what devsandbox hands devsandbox-proxy besides the policy flags:
// the MITM CA and the credentials. Their secret parts (the CA's key, credential values,
// placeholders) travel in devsandbox-proxy's environment, which devsandbox sets to
// exactly these variables; its argv carries only their names. No secret is ever in an
// argv, where /proc/PID/cmdline shows it to every user.
//
// The package is separate from the proxy so that devsandbox can use it without linking
// the proxy's HTTP stack; it imports only the standard library.
package handoff

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
)

// CAEnv holds the MITM CA, certificate and private key, PEM (see proxy/ca).
const CAEnv = "DEVSANDBOX_PROXY_CA"

// ValueEnv and PlaceholderEnv name the variables holding credential i's value and
// placeholder.
func ValueEnv(i int) string       { return "DEVSANDBOX_CREDENTIAL_" + strconv.Itoa(i) }
func PlaceholderEnv(i int) string { return "DEVSANDBOX_PLACEHOLDER_" + strconv.Itoa(i) }

// Credential is the value of one --credential flag: a credential's public fields and
// the variables holding its secrets.
type Credential struct {
	Name           string `json:"name"`   // the in-sandbox variable, or the config key, for messages
	Host           string `json:"host"`   // proxy.Credential.Host: [https:// or http://] egress entry
	Header         string `json:"header"` // header name
	Format         string `json:"format,omitempty"`
	ValueEnv       string `json:"value_env"`
	PlaceholderEnv string `json:"placeholder_env,omitempty"`
}

// String is the flag value: compact JSON.
func (c Credential) String() string {
	b, _ := json.Marshal(c)
	return string(b)
}

// ParseCredential reads a flag value; unknown fields are an error.
func ParseCredential(s string) (Credential, error) {
	var c Credential
	d := json.NewDecoder(bytes.NewReader([]byte(s)))
	d.DisallowUnknownFields()
	if err := d.Decode(&c); err != nil {
		return Credential{}, fmt.Errorf("credential %s: %w", s, err)
	}
	if c.Host == "" || c.Header == "" || c.ValueEnv == "" {
		return Credential{}, fmt.Errorf("credential %s: host, header and value_env are required", s)
	}
	return c, nil
}
