package main

import (
	"errors"
	"flag"
	"fmt"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/samsamq/samsa/client"
)

func init() {
	register(command{name: "message", summary: "find messages by id, by key, or by queue and offset", run: runMessage})
}

func runMessage(args []string) error {
	fs := newFlagSet("message", "", "Look messages up: by id (--id), by key (--topic T --key K), or by queue and offset\n(--topic T --broker B --queue Q --offset O).")
	cf := addClientFlags(fs)
	topic := fs.String("topic", "", "topic (required with --key; with --id, where to look a producer's msgId up (default: every topic))")
	key := fs.String("key", "", "a business key (one of the KEYS) to look up through the brokers' key index")
	id := fs.String("id", "", "a message id: the broker's offsetMsgId or the producer's msgId (UNIQ_KEY)")
	begin := fs.String("begin", "", "only messages stored at or after TIME (RFC 3339, 2006-01-02 15:04:05, Unix ms, or -10m)")
	end := fs.String("end", "", "only messages stored at or before TIME (default: now)")
	maxN := fs.Int("max", 32, "--key: at most this many messages per broker (a broker answers at most 64); --offset: messages to read")
	brokerName := fs.String("broker", "", "--offset: the queue's broker name (default: the topic's only broker)")
	queue := fs.Int("queue", -1, "--offset: the queue id")
	offset := fs.Int64("offset", -1, "a queue offset: read --max messages (default 1 with --offset) of --topic's --queue from it")
	if rest, err := parseFlags(fs, args); err != nil {
		return err
	} else if len(rest) > 0 {
		return fmt.Errorf("unexpected arguments %q", rest)
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	modes := 0
	for _, m := range []bool{*key != "", *id != "", given["offset"]} {
		if m {
			modes++
		}
	}
	if modes != 1 {
		return errors.New("give one of --id ID, --key K (with --topic T), or --offset O (with --topic T --queue Q)")
	}
	if given["offset"] {
		if !given["max"] {
			*maxN = 1
		}
		return messageAt(cf, *topic, *brokerName, *queue, *offset, *maxN)
	}
	var o client.QueryOptions
	o.Max = *maxN
	for _, tf := range []struct {
		s   string
		dst *time.Time
	}{{*begin, &o.Begin}, {*end, &o.End}} {
		if tf.s == "" {
			continue
		}
		t, err := parseTime(tf.s)
		if err != nil {
			return err
		}
		*tf.dst = t
	}
	a, ctx, done, err := cf.connect()
	if err != nil {
		return err
	}
	defer done()
	var msgs []*client.MessageExt
	if *id != "" {
		m, err := a.ViewMessage(ctx, *topic, *id)
		if err != nil {
			return err
		}
		msgs = []*client.MessageExt{m}
	} else {
		if *topic == "" {
			return errors.New("--key needs --topic T")
		}
		if msgs, err = a.QueryMessages(ctx, *topic, *key, o); err != nil {
			return err
		}
	}
	if cf.json {
		rows := make([]map[string]any, 0, len(msgs))
		for _, m := range msgs {
			rows = append(rows, messageJSON(m))
		}
		return printJSON(map[string]any{"messages": rows})
	}
	if len(msgs) == 0 {
		fmt.Printf("no message of %s with key %s\n", *topic, *key)
		return nil
	}
	if *id != "" {
		return printMessageDetail(msgs[0])
	}
	return printMessageTable(msgs)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// bodyText is a body for a terminal: quoted if not UTF-8, cut at n runes
// (n <= 0: whole).
func bodyText(b []byte, n int) string {
	if !utf8.Valid(b) {
		return fmt.Sprintf("%q", b)
	}
	s := string(b)
	if n > 0 && utf8.RuneCountInString(s) > n {
		s = string([]rune(s)[:n]) + "…"
	}
	return s
}

func messageJSON(m *client.MessageExt) map[string]any {
	keys := m.Keys
	if keys == nil {
		keys = []string{}
	}
	return map[string]any{"topic": m.Topic, "broker": m.Queue.BrokerName, "queue": m.Queue.QueueID,
		"queueOffset": m.QueueOffset, "msgId": m.MsgID, "offsetMsgId": m.OffsetMsgID, "commitLogOffset": m.CommitLogOffset,
		"tags": m.Tags, "keys": keys, "properties": m.PropertyMap(), "storeHost": m.StoreHost.String(),
		"bornTime": m.BornTime.Format(time.RFC3339Nano), "storeTime": m.StoreTime.Format(time.RFC3339Nano),
		"reconsumeTimes": m.ReconsumeTimes, "body": bodyText(m.Body, 0)}
}

// printMessageDetail writes one message field by field.
func printMessageDetail(m *client.MessageExt) error {
	tw := table("FIELD", "VALUE")
	row(tw, "topic", m.Topic)
	row(tw, "msgId", m.MsgID)
	row(tw, "offsetMsgId", m.OffsetMsgID)
	row(tw, "queue", fmt.Sprintf("%s/%d@%d", m.Queue.BrokerName, m.Queue.QueueID, m.QueueOffset))
	row(tw, "commitLogOffset", m.CommitLogOffset)
	row(tw, "tags", orDash(m.Tags))
	row(tw, "keys", orDash(strings.Join(m.Keys, " ")))
	row(tw, "bornTime", m.BornTime.Format(time.RFC3339Nano))
	row(tw, "storeTime", m.StoreTime.Format(time.RFC3339Nano))
	row(tw, "bornHost", m.BornHost)
	row(tw, "storeHost", m.StoreHost)
	row(tw, "reconsumeTimes", m.ReconsumeTimes)
	props := m.PropertyMap()
	names := make([]string, 0, len(props))
	for k := range props {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		row(tw, "property "+k, props[k])
	}
	row(tw, "body", bodyText(m.Body, 0))
	return tw.Flush()
}

// messageAt prints n messages of a queue from offset (RocketMQ's
// queryMsgByOffset).
func messageAt(cf *clientFlags, topic, brokerName string, queue int, offset int64, n int) error {
	switch {
	case topic == "":
		return errors.New("--offset needs --topic T")
	case queue < 0:
		return errors.New("--offset needs --queue Q (samsa topic describe lists them)")
	case offset < 0:
		return fmt.Errorf("--offset %d: an offset is at least 0", offset)
	case n < 1:
		return fmt.Errorf("--max %d: at least 1", n)
	}
	a, ctx, done, err := cf.connect()
	if err != nil {
		return err
	}
	defer done()
	if brokerName == "" {
		r, err := a.Route(ctx, topic)
		if err != nil {
			return err
		}
		names := map[string]bool{}
		for _, q := range r.QueueDatas {
			names[q.BrokerName] = true
		}
		if len(names) != 1 {
			return fmt.Errorf("topic %s is on %d brokers: say which with --broker NAME", topic, len(names))
		}
		for n := range names {
			brokerName = n
		}
	}
	q := client.MessageQueue{Topic: topic, BrokerName: brokerName, QueueID: queue}
	msgs, next, err := a.MessagesAt(ctx, q, offset, n)
	if err != nil {
		return err
	}
	if cf.json {
		rows := make([]map[string]any, 0, len(msgs))
		for _, m := range msgs {
			rows = append(rows, messageJSON(m))
		}
		return printJSON(map[string]any{"messages": rows, "nextOffset": next})
	}
	if len(msgs) == 0 {
		fmt.Printf("no message at %s/%d@%d (the queue ends there)\n", brokerName, queue, offset)
		return nil
	}
	if len(msgs) == 1 {
		return printMessageDetail(msgs[0])
	}
	return printMessageTable(msgs)
}

// printMessageTable writes messages one a line.
func printMessageTable(msgs []*client.MessageExt) error {
	tw := table("MSGID", "OFFSETMSGID", "QUEUE", "STORED", "KEYS", "TAGS", "BODY")
	for _, m := range msgs {
		row(tw, m.MsgID, m.OffsetMsgID, fmt.Sprintf("%s/%d@%d", m.Queue.BrokerName, m.Queue.QueueID, m.QueueOffset),
			m.StoreTime.Format("2006-01-02 15:04:05.000"), strings.Join(m.Keys, ","), orDash(m.Tags), bodyText(m.Body, 40))
	}
	return tw.Flush()
}
