package main

import (
	"fmt"
	"sort"
	"time"

	"github.com/samsamq/samsa/client"
	"github.com/samsamq/samsa/protocol"
)

func init() {
	register(command{name: "txn", summary: "XA transactions: list the prepared branches the masters hold", run: runTxn})
}

var txnSubs = []subcommand{
	{"list", "every master's prepared XA branches, oldest first, with their age (--long marks the ones a coordinator left too long)", txnList},
}

func runTxn(args []string) error { return runSubcommand("txn", txnSubs, args) }

func txnList(args []string) error {
	fs := newFlagSet("txn list", "", "The prepared XA branches of every master: they hold their messages invisible until their coordinator commits or rolls them back; the broker never decides them.")
	cf := addClientFlags(fs)
	long := fs.Duration("long", time.Minute, "mark branches prepared longer than this")
	if rest, err := parseFlags(fs, args); err != nil {
		return err
	} else if len(rest) > 0 {
		return fmt.Errorf("unexpected arguments %q", rest)
	}
	a, ctx, done, err := cf.connect()
	if err != nil {
		return err
	}
	defer done()
	opts, err := cf.options()
	if err != nil {
		return err
	}
	p, err := client.NewProducer(client.ProducerOptions{ClientOptions: opts})
	if err != nil {
		return err
	}
	defer func() { _ = p.Close() }() // a one-shot command: nothing to report
	ci, err := a.ClusterInfo(ctx)
	if err != nil {
		return err
	}
	type trow struct {
		Broker     string    `json:"broker"`
		XID        string    `json:"xid"`
		FormatID   int32     `json:"formatId"`
		GTRID      string    `json:"gtrid"`
		BQUAL      string    `json:"bqual"`
		PreparedAt time.Time `json:"preparedAt"`
		AgeSeconds float64   `json:"ageSeconds"`
		Messages   int       `json:"messages"`
		Long       bool      `json:"long"`
	}
	rows := []trow{}
	now := time.Now()
	var names []string
	for name, bd := range ci.BrokerAddrTable {
		if bd.BrokerAddrs[protocol.MasterID] != "" {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	for _, name := range names {
		bs, err := p.XAResource(name).Recover(ctx)
		if err != nil {
			return fmt.Errorf("broker %s: %w", name, err)
		}
		for _, b := range bs {
			age := now.Sub(b.PreparedAt)
			rows = append(rows, trow{Broker: name, XID: b.XID.String(), FormatID: b.XID.FormatID, GTRID: fmt.Sprintf("%x", b.XID.GTRID),
				BQUAL: fmt.Sprintf("%x", b.XID.BQUAL), PreparedAt: b.PreparedAt, AgeSeconds: age.Seconds(), Messages: b.Messages, Long: age >= *long})
		}
	}
	if cf.json {
		return printJSON(rows)
	}
	if len(rows) == 0 {
		fmt.Println("no prepared XA branch")
		return nil
	}
	tw := table("BROKER", "XID", "PREPARED", "AGE", "MESSAGES", "LONG")
	for _, r := range rows {
		mark := ""
		if r.Long {
			mark = "yes: waiting for its coordinator"
		}
		row(tw, r.Broker, r.XID, r.PreparedAt.UTC().Format(time.RFC3339), time.Duration(r.AgeSeconds*float64(time.Second)).Round(time.Second), r.Messages, orDash(mark))
	}
	return tw.Flush()
}
