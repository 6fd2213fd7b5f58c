package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/devsandbox/devsandbox/config"
	"github.com/devsandbox/devsandbox/proxy/audit"
)

func (a *app) logsCommand() *cli.Command {
	return &cli.Command{
		Name:  "logs",
		Usage: "audit logs",
		Subcommands: []*cli.Command{{
			Name:  "proxy",
			Usage: "requests the egress proxy allowed and denied for this project",
			Description: `Prints the audit log of every session of the project, oldest first: one line per
request or tunnel, and one per git push decided by proxy.git_push ("push", the
repository, each ref with its old and new ids, allowed or refused; --denied shows the
refused ones). A session keeps every allowed record. Denied ones (and those that
reached no decision) are kept up to ` + strconv.Itoa(audit.DefaultDeniedBudget) + ` per session, then only the first for each new
destination; the rest are counted in "N denied records dropped" lines. A path longer
than ` + strconv.Itoa(audit.MaxPathBytes) + ` bytes is cut, and its length shown. Session files are removed ` + strconv.Itoa(int(audit.DefaultRetention.Hours()/24)) + ` days
after their last record. Characters that are not printable (controls, bidi
overrides, zero-width characters) are printed escaped, in every form.

--suggest prints egress.allow entries for the denied destinations, each with the port
asked for (a bare host would open every port). It never proposes a
wildcard, a malformed host, a name a C resolver reads as an address (0x7f.1), or a
loopback, this-host, unspecified, link-local,
metadata or multicast address (they are listed as not suggested); a private address
comes with a WARNING line above it.`,
			Flags: []cli.Flag{
				&cli.BoolFlag{Name: "follow", Aliases: []string{"f"}, Usage: "keep printing new records, of every session"},
				&cli.BoolFlag{Name: "json", Usage: "print JSON lines"},
				&cli.BoolFlag{Name: "denied", Usage: "only denied requests"},
				&cli.BoolFlag{Name: "suggest", Usage: "print the allow entries that would have permitted what was denied"},
			},
			Action: a.logsProxy,
		}},
	}
}

func (a *app) logsProxy(c *cli.Context) error {
	l, err := a.load(config.Flags{})
	if err != nil {
		return err
	}
	dir := filepath.Join(l.Config.Host.StateHome, "devsandbox", l.Project.Name)
	filter := audit.LogFilter{Denied: c.Bool("denied") || c.Bool("suggest")}
	print := func(r audit.Record) {
		if c.Bool("json") {
			fmt.Fprintln(a.stdout, string(audit.FormatJSON(r)))
			return
		}
		fmt.Fprintln(a.stdout, audit.FormatText(r, time.Local))
	}
	if c.Bool("follow") {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		if err := audit.Follow(ctx, dir, filter, print); err != nil && ctx.Err() == nil {
			return err
		}
		return nil
	}
	// Streamed (audit.EachLog): memory about audit.SortBudget, whatever the log's size.
	var sugg audit.Suggester
	each := print
	if c.Bool("suggest") {
		each = sugg.Add
	}
	if err := audit.EachLog(dir, filter, each); err != nil {
		return fmt.Errorf("reading the proxy log of %s: %w", l.Project.Name, err)
	}
	if c.Bool("suggest") {
		suggestions, held := sugg.Result()
		if len(suggestions) == 0 && len(held) == 0 {
			fmt.Fprintln(a.stderr, "devsandbox: no denied requests to learn from")
			return nil
		}
		audit.FormatSuggestions(a.stdout, suggestions, held)
	}
	return nil
}
