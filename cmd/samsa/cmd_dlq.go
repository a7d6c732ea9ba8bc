package main

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/samsamq/samsa/client"
)

func init() {
	register(command{name: "dlq", summary: "dead-letter queues: list them, resend their messages to the original topics", run: runDLQ})
}

var dlqSubs = []subcommand{
	{"list", "the dead-letter topics (one per consumer group) and how many messages they hold", dlqList},
	{"resend", "send a group's dead letters again, each to its original topic", dlqResend},
}

func runDLQ(args []string) error { return runSubcommand("dlq", dlqSubs, args) }

func dlqList(args []string) error {
	fs := newFlagSet("dlq list", "", "The dead-letter topics (%DLQ%GROUP) with their messages per queue.")
	cf := addClientFlags(fs)
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
	topics, err := a.Topics(ctx)
	if err != nil {
		return err
	}
	type drow struct {
		Group    string `json:"group"`
		Topic    string `json:"topic"`
		Messages int64  `json:"messages"`
		Queues   []struct {
			Broker string `json:"broker"`
			Queue  int    `json:"queue"`
			Min    int64  `json:"minOffset"`
			Max    int64  `json:"maxOffset"`
		} `json:"queues"`
	}
	rows := []drow{}
	for _, t := range topics {
		if !strings.HasPrefix(t, client.DLQPrefix) {
			continue
		}
		st, err := a.TopicStatus(ctx, t, "")
		if err != nil {
			return err
		}
		r := drow{Group: strings.TrimPrefix(t, client.DLQPrefix), Topic: t}
		for _, s := range st {
			r.Messages += s.MaxOffset - s.MinOffset
			r.Queues = append(r.Queues, struct {
				Broker string `json:"broker"`
				Queue  int    `json:"queue"`
				Min    int64  `json:"minOffset"`
				Max    int64  `json:"maxOffset"`
			}{s.Queue.BrokerName, s.Queue.QueueID, s.MinOffset, s.MaxOffset})
		}
		rows = append(rows, r)
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].Group < rows[j].Group })
	if cf.json {
		return printJSON(rows)
	}
	if len(rows) == 0 {
		fmt.Println("no dead-letter topic")
		return nil
	}
	tw := table("GROUP", "TOPIC", "BROKER", "QUEUE", "MIN", "MAX", "MESSAGES")
	for _, r := range rows {
		for _, q := range r.Queues {
			row(tw, r.Group, r.Topic, q.Broker, q.Queue, q.Min, q.Max, q.Max-q.Min)
		}
	}
	return tw.Flush()
}

func dlqResend(args []string) error {
	fs := newFlagSet("dlq resend", "GROUP", "Send GROUP's dead letters again, each to its original topic (the RETRY_TOPIC the broker\n"+
		"recorded), with its body, tags, keys and user properties and ORIGIN_MESSAGE_ID naming the dead\n"+
		"letter. The dead letters stay where they are (a queue cannot lose a message): the command\n"+
		"prints each queue's next offset; pass it as --offset to go on from there.")
	cf := addClientFlags(fs)
	group := fs.String("group", "", "consumer group (or the first argument)")
	queue := fs.Int("queue", -1, "only this queue of the dead-letter topic (default: every queue)")
	brokerName := fs.String("broker", "", "only this broker's queues (by name)")
	from := fs.Int64("offset", -1, "start at this queue offset (default: the queue's first message); with --queue")
	maxN := fs.Int("max", 1000, "resend at most this many messages")
	dry := fs.Bool("dry-run", false, "list the messages and where they would go, send nothing")
	rest, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	g, err := groupArg(*group, rest)
	if err != nil {
		return err
	}
	if *from >= 0 && *queue < 0 {
		return errors.New("--offset needs --queue Q")
	}
	if *maxN < 1 {
		return fmt.Errorf("--max %d: at least 1", *maxN)
	}
	a, ctx, done, err := cf.connect()
	if err != nil {
		return err
	}
	defer done()
	letters, progress, rerr := a.ResendDeadLetters(ctx, g, client.ResendOptions{Broker: *brokerName, Queue: *queue, From: *from,
		Max: *maxN, DryRun: *dry})
	if errors.Is(rerr, client.ErrNoRoute) && letters == nil {
		return fmt.Errorf("nothing to resend: %w", rerr)
	}
	type qrow struct {
		Broker string `json:"broker"`
		Queue  int    `json:"queue"`
		From   int64  `json:"from"`
		Next   int64  `json:"nextOffset"`
		Sent   int    `json:"resent"`
	}
	type mrow struct {
		MsgID  string `json:"msgId"`
		Queue  string `json:"queue"`
		Topic  string `json:"topic"`
		NewID  string `json:"newMsgId,omitempty"`
		Result string `json:"result"`
	}
	rows := []qrow{}
	for _, p := range progress {
		rows = append(rows, qrow{p.Queue.BrokerName, p.Queue.QueueID, p.From, p.Next, p.Resent})
	}
	msgs := []mrow{}
	for _, l := range letters {
		msgs = append(msgs, mrow{MsgID: l.MsgID, Queue: fmt.Sprintf("%s/%d@%d", l.Queue.BrokerName, l.Queue.QueueID, l.QueueOffset),
			Topic: l.Topic, NewID: l.NewMsgID, Result: l.Result})
	}
	topic := client.DLQPrefix + g
	firstErr := rerr
	if cf.json {
		if err := printJSON(map[string]any{"group": g, "topic": topic, "dryRun": *dry, "queues": rows, "messages": msgs}); err != nil {
			return err
		}
		return firstErr
	}
	tw := table("DEAD LETTER", "MSGID", "TO TOPIC", "RESULT")
	for _, m := range msgs {
		row(tw, m.Queue, m.MsgID, orDash(m.Topic), m.Result)
	}
	if err := tw.Flush(); err != nil {
		return errors.Join(firstErr, err)
	}
	for _, r := range rows {
		fmt.Printf("%s/%d: %d resent from offset %d; next offset %d\n", r.Broker, r.Queue, r.Sent, r.From, r.Next)
	}
	return firstErr
}
