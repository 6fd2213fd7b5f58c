package netfilter

import (
	"errors"
	"fmt"

	"github.com/google/nftables"
	"github.com/google/nftables/userdata"

	"github.com/devsandbox/devsandbox/egress"
)

var table = &nftables.Table{Name: egress.Table, Family: nftables.TableFamilyINet}

// Apply replaces the inet table egress.Table of the current network namespace with
// fw's rules, in one netlink batch the kernel commits atomically: nothing passes
// between the old rules and the new, and a rejected batch leaves the old in place.
// It then reads the table back and fails unless both chains are there, with policy
// drop and every rule. It needs CAP_NET_ADMIN over the namespace.
func Apply(fw egress.Firewall) error {
	if err := validate(fw); err != nil {
		return err
	}
	c, err := nftables.New(nftables.AsLasting())
	if err != nil {
		return fmt.Errorf("opening a netlink socket to nftables: %w", err)
	}
	defer func() { _ = c.CloseLasting() }()
	output, input := rules(fw)
	// Adding the table first makes the delete succeed whether or not it existed.
	c.AddTable(table)
	c.DelTable(table)
	c.AddTable(table)
	for _, ch := range []struct {
		chain *nftables.Chain
		rules []rule
	}{{outputChain(), output}, {inputChain(), input}} {
		c.AddChain(ch.chain)
		for _, r := range ch.rules {
			nr := &nftables.Rule{Table: table, Chain: ch.chain, Exprs: r.exprs}
			if r.comment != "" {
				nr.UserData = userdata.AppendString(nil, userdata.TypeComment, r.comment)
			}
			c.AddRule(nr)
		}
	}
	if err := c.Flush(); err != nil {
		return fmt.Errorf("loading the egress rules through netlink: %w", err)
	}
	if err := verify(c, len(output), len(input)); err != nil {
		return fmt.Errorf("the egress rules were loaded but are not in place: %w", err)
	}
	return nil
}

func outputChain() *nftables.Chain {
	return baseChain("output", nftables.ChainHookOutput)
}

func inputChain() *nftables.Chain {
	return baseChain("input", nftables.ChainHookInput)
}

// baseChain is `type filter hook <hook> priority 0; policy drop;`.
func baseChain(name string, hook *nftables.ChainHook) *nftables.Chain {
	drop := nftables.ChainPolicyDrop
	return &nftables.Chain{
		Name: name, Table: table, Type: nftables.ChainTypeFilter,
		Hooknum: hook, Priority: nftables.ChainPriorityFilter, Policy: &drop,
	}
}

// verify reads the table back: both chains hooked with policy drop and holding the
// expected number of rules, and no other chain.
func verify(c *nftables.Conn, outputRules, inputRules int) error {
	chains, err := c.ListChainsOfTableFamily(nftables.TableFamilyINet)
	if err != nil {
		return fmt.Errorf("listing the chains: %w", err)
	}
	want := map[string]struct {
		hook  *nftables.ChainHook
		rules int
	}{
		"output": {nftables.ChainHookOutput, outputRules},
		"input":  {nftables.ChainHookInput, inputRules},
	}
	seen := map[string]bool{}
	var errs []error
	for _, ch := range chains {
		if ch.Table == nil || ch.Table.Name != egress.Table {
			continue
		}
		w, ok := want[ch.Name]
		if !ok {
			errs = append(errs, fmt.Errorf("table inet %s has an unexpected chain %s", egress.Table, ch.Name))
			continue
		}
		seen[ch.Name] = true
		switch {
		case ch.Hooknum == nil || *ch.Hooknum != *w.hook || ch.Priority == nil || *ch.Priority != *nftables.ChainPriorityFilter:
			errs = append(errs, fmt.Errorf("chain %s is not hooked at %s with priority 0", ch.Name, ch.Name))
		case ch.Type != nftables.ChainTypeFilter:
			errs = append(errs, fmt.Errorf("chain %s has type %q, not filter", ch.Name, ch.Type))
		case ch.Policy == nil || *ch.Policy != nftables.ChainPolicyDrop:
			errs = append(errs, fmt.Errorf("chain %s does not have policy drop", ch.Name))
		}
		rs, err := c.GetRules(table, ch)
		if err != nil {
			errs = append(errs, fmt.Errorf("listing the rules of chain %s: %w", ch.Name, err))
			continue
		}
		if len(rs) != w.rules {
			errs = append(errs, fmt.Errorf("chain %s has %d rules, want %d", ch.Name, len(rs), w.rules))
		}
	}
	for _, name := range []string{"output", "input"} {
		if !seen[name] {
			errs = append(errs, fmt.Errorf("table inet %s has no chain %s", egress.Table, name))
		}
	}
	return errors.Join(errs...)
}
