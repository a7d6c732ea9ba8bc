package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/samsamq/samsa/client"
)

func init() {
	register(command{name: "produce", summary: "send messages: lines from stdin, or --count generated ones", run: runProduce})
}

// userProps collects repeated --property name=value flags.
type userProps map[string]string

func (p userProps) String() string { return fmt.Sprint(map[string]string(p)) }
func (p userProps) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return fmt.Errorf("want name=value, got %q", s)
	}
	p[k] = v
	return nil
}

func runProduce(args []string) (err error) {
	fs := newFlagSet("produce", "", "Send one message per line of stdin (at most 4 MiB a line), or --count generated ones.\nCtrl-C stops reading; messages already sent are waited for.")
	cf := addClientFlags(fs)
	topic := fs.String("topic", "", "topic (required)")
	count := fs.Int("count", 0, "send this many generated messages (default: one per line of stdin)")
	size := fs.Int("size", 128, "generated message body size, bytes")
	tags := fs.String("tags", "", "message tag")
	key := fs.String("key", "", "sharding key (keeps order with a keyed --balancer); {i} is replaced by the message number")
	keys := fs.String("keys", "", "business keys (KEYS property), space-separated")
	mode := fs.String("mode", "sync", "send mode: sync, async or oneway")
	batch := fs.Int("batch", 0, "async: gather up to this many messages per request (SEND_BATCH_MESSAGE)")
	bal := fs.String("balancer", "rr", "queue choice: rr, random, hash, consistent, slots")
	group := fs.String("group", "samsa-cli-producer", "producer group")
	autoCreate := fs.Bool("auto-create", false, "create a topic the name servers do not know through the brokers' TBW102 template\n(only where the broker allows it: autoCreateTopicEnable), as RocketMQ's client does")
	verbose := fs.Bool("v", false, "print every message's result")
	props := userProps{}
	fs.Var(props, "property", "user property name=value (repeatable)")
	if rest, err := parseFlags(fs, args); err != nil {
		return err
	} else if len(rest) > 0 {
		return fmt.Errorf("unexpected arguments %q", rest)
	}
	if *topic == "" {
		return errors.New("--topic T is required")
	}
	b, err := balancer(*bal)
	if err != nil {
		return err
	}
	co, err := cf.options()
	if err != nil {
		return err
	}
	o := client.ProducerOptions{ClientOptions: co, Group: *group, Balancer: b, SendTimeout: cf.timeout, AutoCreateTopic: *autoCreate}
	if *batch > 1 {
		o.Batch = client.BatchOptions{MaxMessages: *batch}
		if *mode == "sync" {
			*mode = "async"
		}
	}
	p, err := client.NewProducer(o)
	if err != nil {
		return err
	}
	defer func() {
		// Close flushes what an early return left batched.
		if cerr := p.Close(); cerr != nil {
			err = errors.Join(err, fmt.Errorf("close the producer: %w", cerr))
		}
	}()
	ctx, cancel := interruptContext()
	defer cancel()

	var sent, failed, bytes atomic.Int64
	var firstErr firstError
	var printErr firstError // the first failed print of a --verbose line
	var outMu sync.Mutex
	report := func(i int, m *client.Message, r *client.SendResult, err error) {
		if err != nil {
			failed.Add(1)
			firstErr.set(err)
		} else {
			sent.Add(1)
			bytes.Add(int64(len(m.Body)))
		}
		if !*verbose {
			return
		}
		outMu.Lock()
		defer outMu.Unlock()
		var perr error
		switch {
		case err != nil:
			fmt.Fprintf(os.Stderr, "message %d: %v\n", i, err)
		case cf.json:
			perr = printJSONLine(map[string]any{"n": i, "msgId": r.MsgID, "offsetMsgId": r.OffsetMsgID, "broker": r.Queue.BrokerName,
				"queue": r.Queue.QueueID, "queueOffset": r.QueueOffset, "status": r.Status.String()})
		case r != nil:
			_, perr = fmt.Printf("%d %s %s/%d@%d %s\n", i, r.Status, r.Queue.BrokerName, r.Queue.QueueID, r.QueueOffset, r.MsgID)
		default:
			_, perr = fmt.Printf("%d sent one-way\n", i)
		}
		if perr != nil {
			printErr.set(perr)
		}
	}
	message := func(i int, body []byte) *client.Message {
		m := &client.Message{Topic: *topic, Body: body, Tags: *tags}
		if *key != "" {
			m.ShardingKey = strings.ReplaceAll(*key, "{i}", fmt.Sprint(i))
		}
		if *keys != "" {
			m.Keys = strings.Fields(*keys)
		}
		if len(props) > 0 {
			m.Properties = props
		}
		return m
	}
	var wg sync.WaitGroup
	// Sends use a context an interrupt does not cancel: a line read is
	// sent (bounded by --timeout), then the command stops.
	sctx := context.Background()
	send := func(i int, m *client.Message) error {
		switch *mode {
		case "sync":
			r, err := p.Send(sctx, m)
			report(i, m, r, err)
		case "async":
			wg.Add(1)
			p.SendAsync(sctx, m, func(r *client.SendResult, err error) {
				report(i, m, r, err)
				wg.Done()
			})
		case "oneway":
			report(i, m, nil, p.SendOneway(sctx, m))
		default:
			return fmt.Errorf("unknown --mode %q (sync, async, oneway)", *mode)
		}
		return nil
	}
	start := time.Now()
	n := 0
	if *count > 0 {
		for ; n < *count && ctx.Err() == nil; n++ {
			if err := send(n, message(n, generated(n, *size))); err != nil {
				return err
			}
		}
	} else {
		lines, readErr := readLines(ctx, os.Stdin)
		for line := range lines {
			if err := send(n, message(n, line)); err != nil {
				return err
			}
			n++
		}
		if err := readErr(); err != nil {
			wg.Wait()
			return err
		}
	}
	// Interrupted or done: what was sent is waited for, nothing more is.
	cancel()
	wg.Wait()
	fctx, fcancel := context.WithTimeout(context.Background(), cf.timeout)
	err = p.Flush(fctx)
	fcancel()
	if err != nil {
		return err
	}
	elapsed := time.Since(start)
	rate := float64(sent.Load()) / elapsed.Seconds()
	if cf.json {
		if err := printJSON(map[string]any{"topic": *topic, "sent": sent.Load(), "failed": failed.Load(), "bytes": bytes.Load(),
			"seconds": elapsed.Seconds(), "msgsPerSec": rate, "mode": *mode}); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(os.Stderr, "sent %d messages (%d bytes) to %s in %v: %.0f msg/s; %d failed\n",
			sent.Load(), bytes.Load(), *topic, elapsed.Round(time.Millisecond), rate, failed.Load())
	}
	if err := firstErr.get(); err != nil {
		if errors.Is(err, client.ErrNoRoute) || errors.Is(err, client.ErrTopicNotExist) {
			return fmt.Errorf("%d of %d sends failed: topic %s does not exist: create it with 'samsa topic create %s' (or send with --auto-create where the broker allows it): %w",
				failed.Load(), n, *topic, *topic, err)
		}
		return fmt.Errorf("%d of %d sends failed, the first: %w", failed.Load(), n, err)
	}
	if err := printErr.get(); err != nil {
		return fmt.Errorf("printing a sent message: %w", err)
	}
	return nil
}

// firstError keeps the first error set; safe for concurrent use. (An
// atomic.Value would panic at the second error of another concrete type.)
type firstError struct{ p atomic.Pointer[error] }

func (f *firstError) set(err error) { f.p.CompareAndSwap(nil, &err) }

// get is the first error set, or nil.
func (f *firstError) get() error {
	if p := f.p.Load(); p != nil {
		return *p
	}
	return nil
}

// maxLine is the longest line produce sends: RocketMQ's default
// maxMessageSize (4 MiB), the broker's limit on a body.
const maxLine = 4 << 20

// readLines reads r's lines (without the newline; empty ones skipped) in a
// goroutine of its own, so that an interrupt stops the caller even while a
// read blocks (a terminal, a pipe that stays open). The channel closes at
// the end of r, at an error, or when ctx ends; then errFn tells which
// error, if any, ended it. A line longer than maxLine is an error that
// names the limit; the lines before it are delivered.
func readLines(ctx context.Context, r io.Reader) (lines <-chan []byte, errFn func() error) {
	ch := make(chan []byte)
	var err error
	done := make(chan struct{})
	go func() {
		defer close(ch)
		defer close(done)
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64<<10), maxLine+1)
		for sc.Scan() {
			if len(sc.Bytes()) == 0 {
				continue
			}
			select {
			case ch <- append([]byte(nil), sc.Bytes()...):
			case <-ctx.Done():
				return
			}
		}
		err = sc.Err()
		if errors.Is(err, bufio.ErrTooLong) {
			err = fmt.Errorf("a line of stdin is longer than %d bytes (4 MiB), the largest message a broker takes (maxMessageSize); nothing after it was sent", maxLine)
		}
	}()
	out := make(chan []byte)
	go func() {
		defer close(out)
		for {
			select {
			case l, ok := <-ch:
				if !ok {
					return
				}
				select {
				case out <- l:
				case <-ctx.Done():
					return
				}
			case <-ctx.Done():
				return
			}
		}
	}()
	return out, func() error {
		select {
		case <-done:
			return err
		default:
			return nil // interrupted while reading
		}
	}
}

// generated is message i's body of size bytes: its number, then filler.
func generated(i, size int) []byte {
	b := make([]byte, size)
	head := fmt.Sprintf("%d ", i)
	for j := range b {
		if j < len(head) {
			b[j] = head[j]
		} else {
			b[j] = 'a' + byte((i+j)%26)
		}
	}
	return b
}
