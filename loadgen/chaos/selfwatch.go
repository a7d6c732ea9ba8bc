package chaos

import (
	"runtime/metrics"
	"sync"
	"time"

	"github.com/samsamq/samsa/loadgen/killloop"
)

// selfWatch measures the harness itself, so that a send gap can be told
// apart from the harness's own stalls: its producers, its partition
// proxies and its role sampler all run in this process, and at millions
// of acknowledgements its ledger is gigabytes of heap.
//
//   - late: how late a 10 ms ticker fired (scheduling, stop-the-world
//     pauses); the longest in a window.
//   - GC CPU: runtime/metrics' GC CPU time (mark workers and mark assists,
//     which stall the allocating producers) spent in a window.
type selfWatch struct {
	p  *killloop.Poller
	mu struct {
		sync.Mutex
		lates []late // lateness above lateFloor, in time order
	}
}

type late struct {
	at time.Time
	d  time.Duration
}

const (
	selfTick  = 10 * time.Millisecond
	lateFloor = 20 * time.Millisecond // below this a tick is on time
)

func startSelfWatch() *selfWatch {
	w := &selfWatch{}
	prev := time.Now() // the poller's goroutine owns it
	w.p = killloop.StartPoller(selfTick, func(now time.Time) {
		// The ticker drops ticks it could not deliver: the time since
		// the last one received, less one period, is how late it is.
		if d := now.Sub(prev) - selfTick; d >= lateFloor {
			w.mu.Lock()
			w.mu.lates = append(w.mu.lates, late{at: prev, d: d})
			w.mu.Unlock()
		}
		prev = now
	})
	return w
}

func (w *selfWatch) close() { w.p.Stop() }

// maxLate is the longest lateness that began in [from, to].
func (w *selfWatch) maxLate(from, to time.Time) time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	var m time.Duration
	for i := len(w.mu.lates) - 1; i >= 0; i-- {
		l := w.mu.lates[i]
		if l.at.Before(from) {
			break
		}
		if !l.at.After(to) {
			m = max(m, l.d)
		}
	}
	return m
}

// gcCPU is the process's GC CPU time so far.
func gcCPU() time.Duration {
	s := []metrics.Sample{{Name: "/cpu/classes/gc/total:cpu-seconds"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindFloat64 {
		return 0
	}
	return time.Duration(s[0].Value.Float64() * float64(time.Second))
}
