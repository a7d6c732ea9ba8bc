package main

import (
	"errors"
	"fmt"
)

// brokerConfig is "samsa broker config": a running broker's
// configuration (GET_BROKER_CONFIG), secret values masked by the broker.
func brokerConfig(args []string) error {
	fs := newFlagSet("broker config", "[ADDR]", "A running broker's configuration, as broker.conf keys (secret values masked).\n"+
		"ADDR is the broker's remoting address (samsa cluster lists them).")
	cf := addClientFlags(fs)
	addr := fs.String("broker", "", "broker address host:port (or the first argument)")
	rest, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if *addr == "" && len(rest) > 0 {
		*addr, rest = rest[0], rest[1:]
	}
	if len(rest) > 0 {
		return fmt.Errorf("unexpected arguments %q", rest)
	}
	if *addr == "" {
		return errors.New("a broker address is required (ADDR or --broker ADDR; samsa cluster lists them)")
	}
	a, ctx, done, err := cf.connect()
	if err != nil {
		return err
	}
	defer done()
	kvs, err := a.BrokerConfig(ctx, *addr)
	if err != nil {
		return err
	}
	if cf.json {
		m := make(map[string]string, len(kvs))
		for _, kv := range kvs {
			m[kv[0]] = kv[1]
		}
		return printJSON(m)
	}
	tw := table("KEY", "VALUE")
	for _, kv := range kvs {
		row(tw, kv[0], kv[1])
	}
	return tw.Flush()
}
