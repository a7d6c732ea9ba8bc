package broker

import (
	"bufio"
	"bytes"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/samsamq/samsa/protocol"
)

// BenchmarkPipelinedPut: 1 KiB messages to one queue, 64 in flight on one
// connection, through the text protocol's put and the remoting send (the
// broker's default async flush). Compare with benchstat:
//
//	go test -run '^$' -bench PipelinedPut -count 8 ./broker/
func BenchmarkPipelinedPut(b *testing.B) {
	const inFlight = 64
	body := bytes.Repeat([]byte("x"), 1024)
	b.Run("proto=text/inflight=64", func(b *testing.B) {
		br := newBroker(b, "", nil)
		if err := br.Start(); err != nil {
			b.Fatal(err)
		}
		defer br.Close()
		nc, err := net.Dial("tcp", br.Addr())
		if err != nil {
			b.Fatal(err)
		}
		defer nc.Close()
		_ = nc.SetDeadline(time.Now().Add(10 * time.Minute))
		rd := bufio.NewReader(nc)
		put := []byte(putLine("benchtext", 0, 0, body, 1))
		readOne := func() {
			line, err := rd.ReadString('\n')
			f := strings.Fields(line)
			if err != nil || len(f) != 4 || f[1] != "200" {
				b.Fatalf("answer %q: %v", line, err)
			}
			n, _ := strconv.Atoi(f[2])
			if _, err := rd.Discard(n); err != nil {
				b.Fatal(err)
			}
		}
		// The first put creates the topic.
		if _, err := nc.Write(put); err != nil {
			b.Fatal(err)
		}
		readOne()
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		b.ResetTimer()
		done := make(chan error, 1)
		// One write a request, as the remoting client does; at most
		// inFlight unanswered.
		window := make(chan struct{}, inFlight)
		go func() {
			for range b.N {
				window <- struct{}{}
				if _, err := nc.Write(put); err != nil {
					done <- err
					return
				}
			}
			done <- nil
		}()
		for range b.N {
			readOne()
			<-window
		}
		if err := <-done; err != nil {
			b.Fatal(err)
		}
	})
	b.Run("proto=remoting/inflight=64", func(b *testing.B) {
		br := newBroker(b, "", nil)
		if err := br.Start(); err != nil {
			b.Fatal(err)
		}
		defer br.Close()
		c := dialRaw(b, br.Addr())
		c.call(createTopicReq("benchremote", 1))
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		b.ResetTimer()
		window := make(chan (<-chan *protocol.Command), inFlight)
		collect := func() {
			if r := <-<-window; r.Code != protocol.Success {
				b.Fatalf("send: %s", r)
			}
		}
		for i := range b.N {
			if i >= inFlight {
				collect()
			}
			window <- c.start(sendReq("benchremote", 0, body, nil))
		}
		for range min(b.N, inFlight) {
			collect()
		}
	})
}
