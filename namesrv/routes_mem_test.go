package namesrv

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/samsamq/samsa/protocol"
)

// BenchmarkRouteTableMemory measures the route table's heap a topic (one
// broker group, one queue a topic) and a route lookup.
func BenchmarkRouteTableMemory(b *testing.B) {
	const topics = 100000
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	rt := NewRouteTable(newFakeClock(), time.Hour)
	for start := 0; start < topics; start += 1024 {
		var tcs []protocol.TopicConfig
		for i := start; i < min(start+1024, topics); i++ {
			tcs = append(tcs, topicConfig(fmt.Sprintf("ms-%07d", i), 1))
		}
		rt.RegisterBroker(registration("c1", "broker-a", 0, "127.0.0.1:10911", 1, tcs...))
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	perTopic := float64(after.HeapAlloc-before.HeapAlloc) / topics
	b.ResetTimer()
	for i := range b.N {
		if _, ok := rt.Route(fmt.Sprintf("ms-%07d", i%topics)); !ok {
			b.Fatal("no route")
		}
	}
	b.ReportMetric(perTopic, "heap-bytes/topic")
	runtime.KeepAlive(rt)
}
