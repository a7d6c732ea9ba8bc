package client_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/samsamq/samsa/client"
	"github.com/samsamq/samsa/devcluster"
)

// startDev starts an embedded name server and broker on loopback, as
// `samsa dev` does, and makes topic; real programs point NameServers at
// their cluster instead.
func startDev(topic string) (nameServer string, stop func()) {
	dev, err := devcluster.Start(devcluster.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		panic(err)
	}
	admin, err := client.NewAdmin(client.ClientOptions{NameServers: []string{dev.NamesrvAddr()}})
	if err != nil {
		panic(err)
	}
	defer admin.Close()
	if err := admin.CreateTopic(context.Background(), topic, client.TopicOptions{Queues: 4}); err != nil {
		panic(err)
	}
	return dev.NamesrvAddr(), func() { dev.Close() }
}

func ExampleProducer() {
	ns, stop := startDev("orders")
	defer stop()

	p, err := client.NewProducer(client.ProducerOptions{
		ClientOptions: client.ClientOptions{NameServers: []string{ns}},
		Balancer:      &client.ConsistentHash{}, // keyed messages keep their queue
	})
	if err != nil {
		panic(err)
	}
	defer p.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	res, err := p.Send(ctx, &client.Message{
		Topic:       "orders",
		Body:        []byte(`{"order":42}`),
		Tags:        "created",
		Keys:        []string{"order-42"},
		ShardingKey: "customer-7", // every message of customer 7 in one queue, in order
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Status, res.Queue.Topic)
	// Output: SEND_OK orders
}

func ExampleProducer_SendAsync() {
	ns, stop := startDev("clicks")
	defer stop()

	p, err := client.NewProducer(client.ProducerOptions{
		ClientOptions: client.ClientOptions{NameServers: []string{ns}},
		// Gather asynchronous sends into batches of up to 100 messages.
		Batch: client.BatchOptions{MaxMessages: 100, Linger: 2 * time.Millisecond},
	})
	if err != nil {
		panic(err)
	}
	defer p.Close()

	var wg sync.WaitGroup
	var mu sync.Mutex
	ok := 0
	for i := 0; i < 1000; i++ {
		wg.Add(1)
		p.SendAsync(context.Background(), &client.Message{Topic: "clicks", Body: []byte(fmt.Sprint(i))},
			func(r *client.SendResult, err error) {
				defer wg.Done()
				if err == nil {
					mu.Lock()
					ok++
					mu.Unlock()
				}
			})
	}
	wg.Wait()
	fmt.Println(ok, "sent")
	// Output: 1000 sent
}

func ExamplePushConsumer() {
	ns, stop := startDev("orders")
	defer stop()
	opts := client.ClientOptions{NameServers: []string{ns}}

	p, err := client.NewProducer(client.ProducerOptions{ClientOptions: opts})
	if err != nil {
		panic(err)
	}
	defer p.Close()
	for _, body := range []string{"apple", "banana", "cherry"} {
		if _, err := p.Send(context.Background(), &client.Message{Topic: "orders", Body: []byte(body)}); err != nil {
			panic(err)
		}
	}

	var mu sync.Mutex
	var got []string
	done := make(chan struct{})
	c, err := client.NewPushConsumer(client.PushConsumerOptions{
		ClientOptions: opts,
		Group:         "billing",
		Start:         client.StartEarliest, // a new group reads what is there already
	}, func(ctx context.Context, m *client.MessageExt) error {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, string(m.Body))
		if len(got) == 3 {
			close(done)
		}
		return nil // handled: the offset may pass it
	})
	if err != nil {
		panic(err)
	}
	if err := c.Subscribe("orders", "*"); err != nil {
		panic(err)
	}
	if err := c.Start(context.Background()); err != nil {
		panic(err)
	}
	<-done
	c.Close() // commits the offsets and leaves the group

	sort.Strings(got)
	fmt.Println(got)
	// Output: [apple banana cherry]
}

func ExamplePullConsumer() {
	ns, stop := startDev("events")
	defer stop()
	opts := client.ClientOptions{NameServers: []string{ns}}
	ctx := context.Background()

	p, err := client.NewProducer(client.ProducerOptions{ClientOptions: opts, Balancer: &client.HashModulo{}})
	if err != nil {
		panic(err)
	}
	defer p.Close()
	var q client.MessageQueue
	for i := 0; i < 3; i++ {
		res, err := p.Send(ctx, &client.Message{Topic: "events", Body: []byte(fmt.Sprint("event ", i)), ShardingKey: "one-queue"})
		if err != nil {
			panic(err)
		}
		q = res.Queue // one key, one queue
	}

	c, err := client.NewPullConsumer(client.PullConsumerOptions{ClientOptions: opts, Group: "auditor"})
	if err != nil {
		panic(err)
	}
	defer c.Close()
	for offset := int64(0); offset < 3; {
		// Wait: the broker holds the pull until a message is there.
		res, err := c.Pull(ctx, q, offset, client.PullOptions{MaxMessages: 10, Wait: time.Second})
		if err != nil {
			panic(err)
		}
		for _, m := range res.Messages {
			fmt.Printf("%s at offset %d\n", m.Body, m.QueueOffset)
		}
		offset = res.NextOffset
	}
	// Remember where the group got to.
	if err := c.Commit(ctx, map[client.MessageQueue]int64{q: 3}); err != nil {
		panic(err)
	}
	// Output:
	// event 0 at offset 0
	// event 1 at offset 1
	// event 2 at offset 2
}
