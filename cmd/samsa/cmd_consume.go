package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/samsamq/samsa/client"
)

func init() {
	register(command{name: "consume", summary: "receive a topic's messages as a consumer group member", run: runConsume})
}

func runConsume(args []string) error {
	fs := newFlagSet("consume", "", "Receive --topic's messages as a member of --group and print them, each queue in offset order.\nCtrl-C (or --count, --idle) stops; the group's offsets are committed on the way out.")
	cf := addClientFlags(fs)
	topic := fs.String("topic", "", "topic (required)")
	group := fs.String("group", "samsa-cli-consumer", "consumer group")
	from := fs.String("from", "latest", "where to start in queues the group has no offset for: earliest, latest, or a time (RFC 3339, 2006-01-02 15:04:05, Unix ms, -10m)")
	broadcast := fs.Bool("broadcast", false, "broadcasting: get every message, whatever the group's other members get")
	tags := fs.String("tags", "*", "tag expression: * or TagA || TagB")
	orderly := fs.Bool("orderly", false, "handle each queue in order, one message at a time (with --pop: ordered POP, a queue held until its batch is acknowledged)")
	count := fs.Int("count", 0, "stop after this many messages (default: run until interrupted)")
	idle := fs.Duration("idle", 0, "stop after no message for this long (default: never)")
	quiet := fs.Bool("quiet", false, "print no messages, only the summary")
	pop := fs.Bool("pop", false, "consume by POP (RocketMQ 5): the broker hands out each message to one member, invisible to the others until acknowledged (after it is printed) or until --invisible passes; any number of members share any number of queues")
	invisible := fs.Duration("invisible", 30*time.Second, "with --pop: how long a received message stays invisible to the group's other members before it comes back unless acknowledged")
	if rest, err := parseFlags(fs, args); err != nil {
		return err
	} else if len(rest) > 0 {
		return fmt.Errorf("unexpected arguments %q", rest)
	}
	if *topic == "" {
		return fmt.Errorf("--topic T is required")
	}
	co, err := cf.options()
	if err != nil {
		return err
	}
	if *pop {
		if *broadcast {
			return fmt.Errorf("--pop: not with --broadcast (POP hands each message to one consumer of the group)")
		}
		if *from != "earliest" && *from != "first" && *from != "latest" && *from != "last" {
			return fmt.Errorf("--pop: --from takes earliest or latest (where a group that never popped a queue starts)")
		}
		o := client.PopConsumerOptions{ClientOptions: co, Group: *group, Topic: *topic, Expression: *tags,
			FromEnd: *from == "latest" || *from == "last", Orderly: *orderly}
		return consumePop(o, *invisible, *count, *idle, *quiet, cf.json)
	}
	o := client.PushConsumerOptions{ClientOptions: co, Group: *group, Broadcast: *broadcast, Orderly: *orderly}
	// One handler per queue: each queue's messages are printed in offset
	// order (queues interleave), and stopping at --count leaves little
	// to redeliver.
	o.Concurrency = 1
	switch *from {
	case "earliest", "first":
		o.Start = client.StartEarliest
	case "latest", "last":
		o.Start = client.StartLatest
	default:
		t, err := parseTime(*from)
		if err != nil {
			return fmt.Errorf("--from: %w", err)
		}
		o.Start, o.StartTime = client.StartTimestamp, t
	}
	ctx, cancel := interruptContext()
	defer cancel()
	var n atomic.Int64
	var last atomic.Int64
	last.Store(time.Now().UnixNano())
	var outMu sync.Mutex
	var printErr error // the first failed print; guarded by outMu
	handler := func(hctx context.Context, m *client.MessageExt) error {
		k := n.Add(1)
		last.Store(time.Now().UnixNano())
		if *count > 0 && k > int64(*count) {
			// Over the count: left unconsumed (the group gets it next
			// time) by failing once the consumer closes.
			<-hctx.Done()
			return hctx.Err()
		}
		if !*quiet {
			outMu.Lock()
			err := printMessage(m, cf.json)
			if err != nil && printErr == nil {
				printErr = err
			}
			outMu.Unlock()
			if err != nil {
				// Not printed: left unconsumed (the group gets it again),
				// and the command stops with the error.
				cancel()
				return err
			}
		}
		if *count > 0 && k == int64(*count) {
			cancel()
		}
		return nil
	}
	c, err := client.NewPushConsumer(o, handler)
	if err != nil {
		return err
	}
	if err := c.Subscribe(*topic, *tags); err != nil {
		return err
	}
	sctx, scancel := cf.context()
	err = c.Start(sctx)
	scancel()
	if err != nil {
		err = errors.Join(err, c.Close())
		if errors.Is(err, client.ErrNoRoute) || errors.Is(err, client.ErrTopicNotExist) {
			return fmt.Errorf("topic %s does not exist (samsa topic list shows the topics; samsa topic create %s makes it): %w", *topic, *topic, err)
		}
		return err
	}
	start := time.Now()
	if *idle > 0 {
		t := time.NewTicker(*idle / 10)
		defer t.Stop()
	wait:
		for {
			select {
			case <-ctx.Done():
				break wait
			case <-t.C:
				if time.Since(time.Unix(0, last.Load())) >= *idle {
					break wait
				}
			}
		}
	} else {
		<-ctx.Done()
	}
	err = c.Close()
	got := min(n.Load(), int64(max(*count, 0)))
	if *count == 0 {
		got = n.Load()
	}
	fmt.Fprintf(os.Stderr, "received %d messages from %s in %v\n", got, *topic, time.Since(start).Round(time.Millisecond))
	outMu.Lock()
	defer outMu.Unlock()
	if printErr != nil {
		return errors.Join(fmt.Errorf("printing a message: %w", printErr), err)
	}
	return err
}

// consumePop is consume --pop: receive, print and acknowledge, until
// interrupted, count messages or idle without one.
func consumePop(o client.PopConsumerOptions, invisible time.Duration, count int, idle time.Duration, quiet, asJSON bool) error {
	if invisible < time.Second {
		return fmt.Errorf("--invisible %v: want at least 1s", invisible)
	}
	c, err := client.NewPopConsumer(o)
	if err != nil {
		return err
	}
	defer func() { _ = c.Close() }() // it only drops the connections
	ctx, cancel := interruptContext()
	defer cancel()
	start, last := time.Now(), time.Now()
	n := 0
	for ctx.Err() == nil && (count <= 0 || n < count) {
		if idle > 0 && time.Since(last) >= idle {
			break
		}
		want := 16
		if count > 0 {
			want = min(want, count-n)
		}
		rctx, rcancel := ctx, context.CancelFunc(func() {})
		if idle > 0 {
			rctx, rcancel = context.WithDeadline(ctx, last.Add(idle))
		}
		msgs, err := c.Receive(rctx, want, invisible)
		rcancel()
		if err != nil {
			if ctx.Err() != nil || (idle > 0 && errors.Is(err, context.DeadlineExceeded)) {
				break
			}
			if errors.Is(err, client.ErrNoRoute) || errors.Is(err, client.ErrTopicNotExist) {
				return fmt.Errorf("topic %s does not exist (samsa topic list shows the topics; samsa topic create %s makes it): %w", o.Topic, o.Topic, err)
			}
			return err
		}
		for _, m := range msgs {
			if !quiet {
				if err := printMessage(m.MessageExt, asJSON); err != nil {
					// Not acknowledged: it comes back to the group after
					// its invisible time.
					return fmt.Errorf("printing a message: %w", err)
				}
			}
			if err := c.Ack(ctx, m); err != nil {
				return fmt.Errorf("acknowledging %s: %w", m.MsgID, err)
			}
			n++
			last = time.Now()
		}
	}
	fmt.Fprintf(os.Stderr, "received %d messages from %s in %v (POP)\n", n, o.Topic, time.Since(start).Round(time.Millisecond))
	return nil
}

// printMessage writes one message: a text line, or a JSON line.
func printMessage(m *client.MessageExt, asJSON bool) error {
	body := string(m.Body)
	if !utf8.Valid(m.Body) {
		body = fmt.Sprintf("%q", m.Body)
	}
	if asJSON {
		keys := m.Keys
		if keys == nil {
			keys = []string{}
		}
		return printJSONLine(map[string]any{"topic": m.Topic, "broker": m.Queue.BrokerName, "queue": m.Queue.QueueID,
			"queueOffset": m.QueueOffset, "msgId": m.MsgID, "tags": m.Tags, "keys": keys, "properties": m.PropertyMap(),
			"bornTime": m.BornTime.Format(time.RFC3339Nano), "storeTime": m.StoreTime.Format(time.RFC3339Nano),
			"reconsumeTimes": m.ReconsumeTimes, "body": body})
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s/%d@%d", m.Queue.BrokerName, m.Queue.QueueID, m.QueueOffset)
	if m.Tags != "" {
		fmt.Fprintf(&b, " tags=%s", m.Tags)
	}
	if len(m.Keys) > 0 {
		fmt.Fprintf(&b, " keys=%s", strings.Join(m.Keys, ","))
	}
	fmt.Fprintf(&b, " %s", body)
	_, err := fmt.Println(b.String())
	return err
}

// printJSONLine writes v as one line of JSON.
func printJSONLine(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = os.Stdout.Write(append(b, '\n'))
	return err
}
