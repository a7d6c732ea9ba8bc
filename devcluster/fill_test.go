package devcluster

import (
	"context"
	"testing"
	"time"

	"github.com/samsamq/samsa/broker"
)

// TestFillThenAddSlave is the catch-up experiment's shape, tiny: a
// master filled through its store holds the backlog on disk, over every
// queue asked for; a slave added afterwards copies it all.
func TestFillThenAddSlave(t *testing.T) {
	dir := t.TempDir()
	dev, err := Start(Options{Dir: dir + "/master", Logger: quietLogger(),
		Broker: broker.Config{BrokerRole: broker.AsyncMaster, MappedFileSizeCommitLog: 1 << 20}})
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	ctx := context.Background()
	msgs, bytes, err := dev.Fill(ctx, FillOptions{Topic: "filled", Queues: 4, Bytes: 2 << 20, Size: 1000, Tag: "t"})
	if err != nil {
		t.Fatal(err)
	}
	st := dev.Broker.Store()
	if msgs == 0 || msgs%fillBatch != 0 || bytes < 2<<20 || st.DurableOffset() < st.HandedOffset() {
		t.Fatalf("filled %d messages, %d bytes; durable %d of %d", msgs, bytes, st.DurableOffset(), st.HandedOffset())
	}
	waitFor(t, func() bool {
		var n int64
		for q := range int32(4) {
			n += st.MaxQueueOffset("filled", q)
		}
		return n == msgs
	}, "every filled message indexed over the 4 queues")
	s, err := dev.AddSlave(dir + "/slave")
	if err != nil {
		t.Fatal(err)
	}
	if err := dev.WaitSlavesInSync(ctx, 60*time.Second); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return s.Store().WrittenOffset() == st.HandedOffset() }, "the slave copied the fill")
}
