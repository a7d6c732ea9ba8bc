package broker

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"maps"
	"syscall"
	"testing"
	"time"

	"github.com/samsamq/samsa/client"
	"github.com/samsamq/samsa/internal/netx"
	"github.com/samsamq/samsa/internal/netx/netxtest"
	"github.com/samsamq/samsa/protocol"
	"github.com/samsamq/samsa/storage/record"
)

// checkedPullReq is pullReq from a client that says it checks CRCs.
func checkedPullReq(topic string, queue int32, offset int64, max int32, checks bool) *protocol.Command {
	req := pullReq("g", topic, queue, offset, max, 0, "*")
	if checks {
		req.ExtFields[protocol.ExtClientChecksCRC] = "true"
	}
	return req
}

// TestPullFromFileMatchesHeap: over every backend, a pull answered from
// the files (a client that checks CRCs, transferMsgByHeap false) and the
// same pull answered from memory (a client that does not) are the same
// answer, byte for byte: code, header fields and body. The pulls are
// pipelined, so the writer sends file answers inside batches of other
// frames. The pulls do send from the files (the sendfile counter
// moves), on every backend; transferMsgByHeap=true reads instead.
func TestPullFromFileMatchesHeap(t *testing.T) {
	for _, be := range []string{"pwrite", "mmap", "odirect", "uring"} {
		for _, heap := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/heap=%v", be, heap), func(t *testing.T) {
				dir := t.TempDir()
				mutate := func(c *Config) {
					c.StoreBackend = be
					c.TransferMsgByHeap = heap
				}
				b := newBroker(t, dir, mutate)
				if err := b.Start(); err != nil {
					b.Close()
					t.Skipf("backend %s here: %v", be, err)
				}
				c := dialRaw(t, b.Addr())
				if r := c.call(createTopicReq("zc", 4)); r.Code != protocol.Success {
					t.Fatal(r)
				}
				// Bursts of one queue (runs long enough to go from the
				// files), then one record a queue in turn (short runs, read).
				const n = 240
				for i := range n {
					q := int32(i / 40 % 4)
					if i >= 160 {
						q = int32(i % 4)
					}
					body := bytes.Repeat([]byte{byte('a' + i%26)}, 100+(i*389)%3000)
					if r := c.call(sendReq("zc", q, body, map[string]string{"i": fmt.Sprint(i)})); r.Code != protocol.Success {
						t.Fatal(r)
					}
				}
				// Pulls of records still in a write buffer read them (the
				// answers must match all the same).
				waitIndexed(t, b, "zc", 4, n/4)
				comparePulls(t, c, n)
				b.Close()
				b = startBroker(t, dir, mutate) // everything is in the files now
				defer b.Close()
				c = dialRaw(t, b.Addr())
				before := b.stats.sentFromFile.Load()
				comparePulls(t, c, n)
				sent := b.stats.sentFromFile.Load() - before
				switch {
				case !heap && sent == 0:
					t.Fatal("nothing was sent from the files")
				case heap && sent != 0:
					t.Fatalf("transferMsgByHeap, yet %d bytes went from the files", sent)
				}
				t.Logf("%d bytes sent from the files", sent)
			})
		}
	}
}

// waitIndexed waits (deadline 10 s) until each of topic's queues indexes
// per messages.
func waitIndexed(t *testing.T, b *Broker, topic string, queues int32, per int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for q := int32(0); q < queues; q++ {
		for b.store.MaxQueueOffset(topic, q) < int64(per) {
			if time.Now().After(deadline) {
				t.Fatalf("queue %d indexes %d messages, want %d", q, b.store.MaxQueueOffset(topic, q), per)
			}
			time.Sleep(time.Millisecond)
		}
	}
}

// comparePulls pulls every queue of "zc" at several offsets and sizes,
// as a client that checks and as one that does not, all pipelined, and
// compares each pair of answers.
func comparePulls(t *testing.T, c *rawClient, n int) {
	t.Helper()
	type pair struct{ file, heap <-chan *protocol.Command }
	var pairs []pair
	var names []string
	for q := int32(0); q < 4; q++ {
		for _, off := range []int64{0, 1, 7, 38, 45, int64(n/4) - 3, int64(n / 4), int64(n/4) + 5} {
			for _, max := range []int32{1, 5, 32} {
				pairs = append(pairs, pair{c.start(checkedPullReq("zc", q, off, max, true)), c.start(checkedPullReq("zc", q, off, max, false))})
				names = append(names, fmt.Sprintf("queue %d at %d max %d", q, off, max))
			}
		}
	}
	for i, p := range pairs {
		f, h := <-p.file, <-p.heap
		if f.Code != h.Code || f.Remark != h.Remark || !bytes.Equal(f.Body, h.Body) || !maps.Equal(f.ExtFields, h.ExtFields) {
			t.Fatalf("%s: from the files %d %q %v (%d bytes), from memory %d %q %v (%d bytes)", names[i],
				f.Code, f.Remark, f.ExtFields, len(f.Body), h.Code, h.Remark, h.ExtFields, len(h.Body))
		}
		for _, r := range decodeRecords(t, f.Body) {
			if !bytes.Equal(r.Body, bytes.Repeat(r.Body[:1], len(r.Body))) {
				t.Fatalf("%s: a record's body is mixed", names[i])
			}
		}
		if f.Code == protocol.Success {
			for rest := f.Body; len(rest) > 0; {
				size, _, _ := record.Header(rest)
				if err := record.Verify(rest[:size], record.NoPhys); err != nil {
					t.Fatalf("%s: %v", names[i], err)
				}
				rest = rest[size:]
			}
		}
	}
}

// BenchmarkPullPath pulls a warm backlog of 1 KiB messages, 32 or 256 a
// pull,
// as a client that checks CRCs (path=sendfile: with one queue from the
// files; with 8 interleaved queues read, unchecked) and as one that does
// not (path=heap: read and checked). The
// client reads each answer whole and decodes nothing, so cpu-s/GiB, the
// process's CPU time (getrusage) per GiB pulled, is mostly the broker's
// pull path and the loopback socket's.
func BenchmarkPullPath(b *testing.B) {
	for _, queues := range []int32{1, 8} {
		dir := b.TempDir()
		br := newBroker(b, dir, func(c *Config) { c.MappedFileSizeCommitLog = 64 << 20 })
		if err := br.Start(); err != nil {
			b.Fatal(err)
		}
		c := dialRaw(b, br.Addr())
		if r := c.call(createTopicReq("bench", queues)); r.Code != protocol.Success {
			b.Fatal(r)
		}
		const n = 32 << 10 // 32 MiB of bodies
		body := bytes.Repeat([]byte("x"), 1024)
		var inflight []<-chan *protocol.Command
		for i := range n {
			inflight = append(inflight, c.start(sendReq("bench", int32(i)%queues, body, nil)))
			if len(inflight) == 256 || i == n-1 {
				for _, ch := range inflight {
					if r := <-ch; r.Code != protocol.Success {
						b.Fatal(r)
					}
				}
				inflight = inflight[:0]
			}
		}
		per := int64(n / int(queues))
		deadline := time.Now().Add(30 * time.Second)
		for q := int32(0); q < queues; q++ {
			for br.store.MaxQueueOffset("bench", q) < per && time.Now().Before(deadline) {
				time.Sleep(time.Millisecond)
			}
		}
		for _, pc := range []struct {
			msgs int32
			file bool
		}{{32, false}, {32, true}, {256, false}, {256, true}} {
			file, msgs := pc.file, pc.msgs
			name := "heap"
			if file {
				name = "sendfile"
			}
			b.Run(fmt.Sprintf("queues=%d/msgs=%d/path=%s", queues, msgs, name), func(b *testing.B) {
				var bytesPulled int64
				off, q := int64(0), int32(0)
				cpu0 := cpuSeconds()
				sent0 := br.stats.sentFromFile.Load()
				for b.Loop() {
					r := c.call(checkedPullReq("bench", q, off, msgs, file))
					if r.Code != protocol.Success {
						b.Fatalf("pull at %d: %s", off, r)
					}
					bytesPulled += int64(len(r.Body))
					if q++; q == queues {
						q, off = 0, off+int64(msgs)
						if off >= per {
							off = 0
						}
					}
				}
				b.SetBytes(bytesPulled / int64(b.N))
				b.ReportMetric((cpuSeconds()-cpu0)/(float64(bytesPulled)/(1<<30)), "cpu-s/GiB")
				// With 8 queues a pull's records are runs of one: read
				// (storage minFileRun), unchecked for a client that checks.
				if sent := br.stats.sentFromFile.Load() - sent0; (file && queues == 1) != (sent > 0) {
					b.Fatalf("path %s, %d queues: %d bytes from the files", name, queues, sent)
				}
			})
		}
		br.Close()
	}
}

// cpuSeconds is the process's CPU time, user and system.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

// TestTLSPullsAreRead: on a permissive port, our client's pulls of a
// one-queue backlog (runs of 32 KiB) go from the files over plain TCP and
// are read, never sent from the files, over TLS.
func TestTLSPullsAreRead(t *testing.T) {
	certs := netxtest.New(t)
	ns, b := tlsCluster(t, certs, netx.TLSPermissive, netx.ClientAuthNone)
	for _, tlsOn := range []bool{true, false} {
		var cfg *tls.Config
		if tlsOn {
			cfg = certs.ClientConfig(t, false)
		}
		topic := fmt.Sprintf("tls-pull-%v", tlsOn)
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		co := client.ClientOptions{NameServers: []string{ns.Addr()}, TLS: cfg, RequestTimeout: 10 * time.Second}
		a, err := client.NewAdmin(co)
		if err != nil {
			t.Fatal(err)
		}
		if err := a.CreateTopic(ctx, topic, client.TopicOptions{Queues: 1}); err != nil {
			t.Fatal(err)
		}
		a.Close()
		p, err := client.NewProducer(client.ProducerOptions{ClientOptions: co, SendTimeout: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		// 1.4 MB: the first records are out of the stage's write buffer
		// (written out a 256 KiB at a time) and in the file.
		start := b.store.WrittenOffset()
		for i := range 1200 {
			if _, err := p.Send(ctx, &client.Message{Topic: topic, Body: bytes.Repeat([]byte{byte('a' + i%26)}, 1024)}); err != nil {
				t.Fatal(err)
			}
		}
		p.Close()
		waitIndexed(t, b, topic, 1, 1200)
		waitFor(t, func() bool { return b.store.HandedOffset() >= start+128<<10 }, "the first records handed to the file")
		c, err := client.NewPullConsumer(client.PullConsumerOptions{ClientOptions: co, Group: "g-" + topic})
		if err != nil {
			t.Fatal(err)
		}
		before := b.stats.sentFromFile.Load()
		q := client.MessageQueue{Topic: topic, BrokerName: b.cfg.BrokerName, QueueID: 0}
		got := 0
		for off := int64(0); off < 64; {
			r, err := c.Pull(ctx, q, off, client.PullOptions{MaxMessages: 32})
			if err != nil {
				t.Fatal(err)
			}
			got += len(r.Messages)
			off = r.NextOffset
		}
		c.Close()
		cancel()
		sent := b.stats.sentFromFile.Load() - before
		if got != 64 || tlsOn != (sent == 0) {
			t.Fatalf("TLS %v: %d messages, %d bytes sent from the files", tlsOn, got, sent)
		}
	}
}
