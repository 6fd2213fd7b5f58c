package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"unicode"

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
			Flags: []cli.Flag{
				&cli.BoolFlag{Name: "follow", Aliases: []string{"f"}, Usage: "keep printing new records"},
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
	dir := filepath.Join(l.cfg.Host.StateHome, "devsandbox", l.proj.Name)
	filter := audit.LogFilter{Denied: c.Bool("denied") || c.Bool("suggest")}
	print := func(r audit.Record) { printRecord(a.stdout, r, c.Bool("json")) }
	if c.Bool("follow") {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		if err := audit.Follow(ctx, dir, filter, print); err != nil && ctx.Err() == nil {
			return err
		}
		return nil
	}
	recs, err := audit.ReadLog(dir, filter)
	if err != nil {
		return fmt.Errorf("reading the proxy log of %s: %w", l.proj.Name, err)
	}
	if c.Bool("suggest") {
		sugg := audit.Suggest(recs)
		if len(sugg) == 0 {
			fmt.Fprintln(a.stderr, "devsandbox: no denied requests to learn from")
			return nil
		}
		fmt.Fprintln(a.stdout, "# egress.allow entries that would have permitted the denied requests;")
		fmt.Fprintln(a.stdout, "# review them, then add them to your config (or pass --allow):")
		for _, s := range sugg {
			fmt.Fprintln(a.stdout, strconv.Quote(s)+",")
		}
		return nil
	}
	for _, r := range recs {
		print(r)
	}
	return nil
}

func printRecord(w io.Writer, r audit.Record, asJSON bool) {
	if asJSON {
		b, _ := json.Marshal(r)
		fmt.Fprintln(w, string(b))
		return
	}
	// Hosts, paths and methods come from the sandbox: never let them reach the terminal
	// as control sequences.
	target := printable(r.Host + ":" + strconv.Itoa(r.Port) + r.Path)
	fmt.Fprintf(w, "%s %-5s %-7s %s %d %dB↑ %dB↓ %dms", r.Time.Local().Format("2006-01-02 15:04:05"), r.Decision, printable(r.Method), target, r.Status, r.BytesUp, r.BytesDown, r.DurationMS)
	if r.Decision != audit.DecisionAllow {
		fmt.Fprintf(w, " rule=%q %s", r.Rule, printable(r.Reason))
	}
	fmt.Fprintln(w)
}

// printable quotes s when it holds anything but printable characters.
func printable(s string) string {
	for _, r := range s {
		if !unicode.IsPrint(r) {
			return strconv.Quote(s)
		}
	}
	return s
}
