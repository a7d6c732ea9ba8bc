package main

import (
	"errors"
	"flag"
	"fmt"
)

func init() {
	register(command{name: "stats", summary: "print a broker's text stats (STAT name value)", run: runStats})
}

func runStats(args []string) error {
	fs := flag.NewFlagSet("stats", flag.ContinueOnError)
	cf := addClientFlags(fs)
	addr := fs.String("broker", "", "broker address host:port (required; see samsa cluster)")
	rest, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if *addr == "" && len(rest) > 0 {
		*addr = rest[0]
	}
	if *addr == "" {
		return errors.New("--broker ADDR is required (samsa cluster lists them)")
	}
	a, ctx, done, err := cf.connect()
	if err != nil {
		return err
	}
	defer done()
	stats, err := a.BrokerStats(ctx, *addr)
	if err != nil {
		return err
	}
	if cf.json {
		m := make(map[string]string, len(stats))
		for _, s := range stats {
			m[s.Name] = s.Value
		}
		return printJSON(m)
	}
	tw := table("STAT", "VALUE")
	for _, s := range stats {
		row(tw, s.Name, s.Value)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(stats) == 0 {
		fmt.Println("(no stats)")
	}
	return nil
}
