package main

import (
	"errors"
	"fmt"
)

func init() {
	register(command{name: "stats", summary: "print a broker's text stats (STAT name value; an item: ha, store, topics)", run: runStats})
}

func runStats(args []string) error {
	fs := newFlagSet("stats", "[ADDR] [ITEM]", "A broker's text stats (STAT name value); an ITEM (ha, store, topics) asks for its lines only.")
	cf := addClientFlags(fs)
	addr := fs.String("broker", "", "broker address host:port (required; see samsa cluster)")
	rest, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if *addr == "" && len(rest) > 0 {
		*addr, rest = rest[0], rest[1:]
	}
	if *addr == "" {
		return errors.New("--broker ADDR is required (samsa cluster lists them)")
	}
	// An item (ha, store, topics) asks for that group of lines only.
	item := ""
	if len(rest) > 0 {
		item = rest[0]
	}
	if len(rest) > 1 {
		return fmt.Errorf("unexpected arguments %q (one stats item: ha, store, topics)", rest[1:])
	}
	a, ctx, done, err := cf.connect()
	if err != nil {
		return err
	}
	defer done()
	stats, err := a.BrokerStats(ctx, *addr, item)
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
