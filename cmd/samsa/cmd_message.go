package main

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/samsamq/samsa/client"
)

func init() {
	register(command{name: "message", summary: "find messages by key (--topic T --key K) or by id (--id ID)", run: runMessage})
}

func runMessage(args []string) error {
	fs := newFlagSet("message", "", "Look messages up: by id (--id), by key (--topic T --key K), or by queue and offset\n(--topic T --broker B --queue Q --offset O).")
	cf := addClientFlags(fs)
	topic := fs.String("topic", "", "topic (required with --key; with --id, where to look a producer's msgId up (default: every topic))")
	key := fs.String("key", "", "a business key (one of the KEYS) to look up through the brokers' key index")
	id := fs.String("id", "", "a message id: the broker's offsetMsgId or the producer's msgId (UNIQ_KEY)")
	begin := fs.String("begin", "", "only messages stored at or after TIME (RFC 3339, 2006-01-02 15:04:05, Unix ms, or -10m)")
	end := fs.String("end", "", "only messages stored at or before TIME (default: now)")
	maxN := fs.Int("max", 32, "at most this many messages per broker (a broker answers at most 64)")
	if rest, err := parseFlags(fs, args); err != nil {
		return err
	} else if len(rest) > 0 {
		return fmt.Errorf("unexpected arguments %q", rest)
	}
	if (*key == "") == (*id == "") {
		return errors.New("give one of --key K (with --topic T) or --id ID")
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
		printMessageDetail(msgs[0])
		return nil
	}
	tw := table("MSGID", "OFFSETMSGID", "QUEUE", "STORED", "KEYS", "TAGS", "BODY")
	for _, m := range msgs {
		row(tw, m.MsgID, m.OffsetMsgID, fmt.Sprintf("%s/%d@%d", m.Queue.BrokerName, m.Queue.QueueID, m.QueueOffset),
			m.StoreTime.Format("2006-01-02 15:04:05.000"), strings.Join(m.Keys, ","), orDash(m.Tags), bodyText(m.Body, 40))
	}
	return tw.Flush()
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
		"tags": m.Tags, "keys": keys, "properties": m.Properties, "storeHost": m.StoreHost.String(),
		"bornTime": m.BornTime.Format(time.RFC3339Nano), "storeTime": m.StoreTime.Format(time.RFC3339Nano),
		"reconsumeTimes": m.ReconsumeTimes, "body": bodyText(m.Body, 0)}
}

// printMessageDetail writes one message field by field.
func printMessageDetail(m *client.MessageExt) {
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
	names := make([]string, 0, len(m.Properties))
	for k := range m.Properties {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		row(tw, "property "+k, m.Properties[k])
	}
	row(tw, "body", bodyText(m.Body, 0))
	tw.Flush()
}
