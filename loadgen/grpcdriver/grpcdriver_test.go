package grpcdriver

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/samsamq/samsa/broker"
	"github.com/samsamq/samsa/devcluster"
	"github.com/samsamq/samsa/loadgen"
)

func TestProduceConsume(t *testing.T) {
	quiet := slog.New(slog.DiscardHandler)
	c, err := devcluster.Start(devcluster.Options{Dir: t.TempDir(), Broker: broker.Config{Logger: quiet}, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	d, err := New(Options{NameServers: []string{c.NamesrvAddr()}})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := d.CreateTopic(ctx, "lg", 4); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	got := map[string]bool{}
	cons, err := d.NewConsumer(ctx, "lg", "lg-group", loadgen.ConsumerOptions{}, func(p []byte) {
		mu.Lock()
		got[string(p)] = true
		mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	p, err := d.NewProducer(ctx, "lg", loadgen.ProducerOptions{Mode: loadgen.SendAsync, MaxInFlight: 16})
	if err != nil {
		t.Fatal(err)
	}
	const n = 200
	errs := make(chan error, n)
	for i := range n {
		p.Send(ctx, "", []byte(fmt.Sprint(i)), func(err error) { errs <- err })
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	for {
		mu.Lock()
		k := len(got)
		mu.Unlock()
		if k == n {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("received %d of %d", k, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
