// Package netfilter applies an egress.Firewall to the current network namespace
// through netlink, with the semantics of egress.Firewall.NftScript but without the
// nft binary: the docker isolator runs it as a role of devsandbox-init in a helper
// container that joins the sandbox container's network namespace, where the user's
// image has no nft. Apply works on Linux only; the argument codec (EncodeArg,
// DecodeArg) is pure and builds everywhere, for the docker backend on macOS.
package netfilter

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/devsandbox/devsandbox/egress"
)

// FirewallArg starts the argument of devsandbox-init's firewall role; the rest of the
// argument is the Firewall as JSON, base64url-encoded without padding.
const FirewallArg = "--firewall="

// maxArg is the longest argument Linux passes to a program (MAX_ARG_STRLEN, 32
// pages, with the terminating NUL).
const maxArg = 32*4096 - 1

// EncodeArg returns the whole argument (FirewallArg and the encoded fw) that has
// devsandbox-init apply fw.
func EncodeArg(fw egress.Firewall) (string, error) {
	if err := validate(fw); err != nil {
		return "", err
	}
	js, err := json.Marshal(fw)
	if err != nil {
		return "", fmt.Errorf("encoding the egress firewall: %w", err)
	}
	arg := FirewallArg + base64.RawURLEncoding.EncodeToString(js)
	if len(arg) > maxArg {
		return "", fmt.Errorf("the egress firewall has too many rules (%d) for one argument", len(fw.Matches))
	}
	return arg, nil
}

// DecodeArg returns the Firewall of an argument made by EncodeArg. Unknown fields
// are an error: a devsandbox-init older than the devsandbox that wrote the argument
// must not drop rules it does not know.
func DecodeArg(arg string) (egress.Firewall, error) {
	enc, ok := strings.CutPrefix(arg, FirewallArg)
	if !ok {
		return egress.Firewall{}, fmt.Errorf("the firewall argument does not start with %s", FirewallArg)
	}
	js, err := base64.RawURLEncoding.DecodeString(enc)
	if err != nil {
		return egress.Firewall{}, fmt.Errorf("decoding the firewall argument: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	var fw egress.Firewall
	if err := dec.Decode(&fw); err != nil {
		return egress.Firewall{}, fmt.Errorf("decoding the firewall argument: %w", err)
	}
	if dec.More() {
		return egress.Firewall{}, fmt.Errorf("decoding the firewall argument: data after the firewall")
	}
	if err := validate(fw); err != nil {
		return egress.Firewall{}, err
	}
	return fw, nil
}

// validate checks what the rules depend on: every match has a destination and a
// known verdict.
func validate(fw egress.Firewall) error {
	for i, m := range fw.Matches {
		if !m.Dst.IsValid() {
			return fmt.Errorf("egress firewall match %d (%s) has no destination", i, m.Why)
		}
		if m.Verdict != egress.Accept && m.Verdict != egress.Drop {
			return fmt.Errorf("egress firewall match %d (%s) has an unknown verdict %d", i, m.Why, m.Verdict)
		}
	}
	return nil
}
