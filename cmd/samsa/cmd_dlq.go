package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/samsamq/samsa/client"
)

func init() {
	register(command{name: "dlq", summary: "dead-letter queues: list them, resend their messages to the original topics", run: runDLQ})
}

// dlqPrefix names a group's dead-letter topic (RocketMQ's MixAll.DLQ_GROUP_TOPIC_PREFIX).
const dlqPrefix = "%DLQ%"

var dlqSubs = [][2]string{
	{"list", "the dead-letter topics (one per consumer group) and how many messages they hold"},
	{"resend", "send a group's dead letters again, each to its original topic"},
}

func runDLQ(args []string) error {
	if len(args) == 0 {
		subUsage(os.Stderr, "dlq", dlqSubs)
		return errors.New("a subcommand is required")
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		subUsage(os.Stdout, "dlq", dlqSubs)
		return nil
	case "list":
		return dlqList(args[1:])
	case "resend":
		return dlqResend(args[1:])
	}
	subUsage(os.Stderr, "dlq", dlqSubs)
	return fmt.Errorf("unknown dlq subcommand %q", args[0])
}

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
		if !strings.HasPrefix(t, dlqPrefix) {
			continue
		}
		st, err := a.TopicStatus(ctx, t, "")
		if err != nil {
			return err
		}
		r := drow{Group: strings.TrimPrefix(t, dlqPrefix), Topic: t}
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
	topic := dlqPrefix + g
	st, err := a.TopicStatus(ctx, topic, "")
	if errors.Is(err, client.ErrNoRoute) {
		return fmt.Errorf("group %s has no dead-letter topic (%s): nothing to resend", g, topic)
	}
	if err != nil {
		return err
	}
	var p *client.Producer
	if !*dry {
		co, err := cf.options()
		if err != nil {
			return err
		}
		if p, err = client.NewProducer(client.ProducerOptions{ClientOptions: co, Group: "samsa-cli-dlq-resend", SendTimeout: cf.timeout}); err != nil {
			return err
		}
		defer p.Close()
	}
	type qrow struct {
		Broker string `json:"broker"`
		Queue  int    `json:"queue"`
		From   int64  `json:"from"`
		Next   int64  `json:"nextOffset"`
		Sent   int    `json:"resent"`
	}
	var rows []qrow
	type mrow struct {
		MsgID  string `json:"msgId"`
		Queue  string `json:"queue"`
		Topic  string `json:"topic"`
		NewID  string `json:"newMsgId,omitempty"`
		Result string `json:"result"`
	}
	var msgs []mrow
	left := *maxN
	var firstErr error
	for _, s := range st {
		if (*queue >= 0 && s.Queue.QueueID != *queue) || (*brokerName != "" && s.Queue.BrokerName != *brokerName) {
			continue
		}
		start := s.MinOffset
		if *from >= 0 {
			start = *from
		}
		r := qrow{Broker: s.Queue.BrokerName, Queue: s.Queue.QueueID, From: start, Next: start}
		for left > 0 && r.Next < s.MaxOffset && ctx.Err() == nil && firstErr == nil {
			batch, _, err := a.MessagesAt(ctx, s.Queue, r.Next, min(left, 32))
			if err != nil {
				firstErr = err
				break
			}
			if len(batch) == 0 {
				break
			}
			for _, m := range batch {
				out, err := client.Resendable(m)
				mr := mrow{MsgID: m.MsgID, Queue: fmt.Sprintf("%s/%d@%d", m.Queue.BrokerName, m.Queue.QueueID, m.QueueOffset)}
				switch {
				case err != nil:
					mr.Result = "skipped: " + err.Error()
				case *dry:
					mr.Topic, mr.Result = out.Topic, "would resend"
				default:
					mr.Topic = out.Topic
					res, err := p.Send(context.WithoutCancel(ctx), out)
					if err != nil {
						firstErr = fmt.Errorf("resend %s to %s: %w", m.MsgID, out.Topic, err)
						mr.Result = "failed: " + err.Error()
						msgs = append(msgs, mr)
						break
					}
					mr.NewID, mr.Result = res.MsgID, "resent"
					r.Sent++
				}
				if firstErr != nil {
					break
				}
				msgs = append(msgs, mr)
				r.Next = m.QueueOffset + 1
				left--
			}
		}
		rows = append(rows, r)
	}
	if cf.json {
		if rows == nil {
			rows = []qrow{}
		}
		if msgs == nil {
			msgs = []mrow{}
		}
		if err := printJSON(map[string]any{"group": g, "topic": topic, "dryRun": *dry, "queues": rows, "messages": msgs}); err != nil {
			return err
		}
		return firstErr
	}
	tw := table("DEAD LETTER", "MSGID", "TO TOPIC", "RESULT")
	for _, m := range msgs {
		row(tw, m.Queue, m.MsgID, orDash(m.Topic), m.Result)
	}
	tw.Flush()
	for _, r := range rows {
		fmt.Printf("%s/%d: %d resent from offset %d; next offset %d\n", r.Broker, r.Queue, r.Sent, r.From, r.Next)
	}
	return firstErr
}
