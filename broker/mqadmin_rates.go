package broker

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// rateWindows are the spans RocketMQ's putTps and getTransferedTps give,
// in that order: 10 s, 1 min, 10 min.
var rateWindows = [3]time.Duration{10 * time.Second, time.Minute, 10 * time.Minute}

// rateSample is the broker's message counts at one moment.
type rateSample struct {
	at       time.Time
	put, get int64
}

// rateSampler keeps one sample a second of the put and get counts for
// the longest window, and answers the rate over each window. A plain
// state machine fed by run. Safe for
// concurrent use.
type rateSampler struct {
	mu struct {
		sync.Mutex
		ring [601]rateSample // 10 min of 1 s samples, and one more
		n    int             // samples held
		next int             // where the next goes
	}
}

// add records a sample.
func (r *rateSampler) add(s rateSample) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.mu.ring[r.mu.next] = s
	r.mu.next = (r.mu.next + 1) % len(r.mu.ring)
	r.mu.n = min(r.mu.n+1, len(r.mu.ring))
}

// rates returns the put and get rates (per second) over each of
// rateWindows: from the newest sample back to the one nearest the
// window's start (the oldest held, while the broker is younger than the
// window); 0 with fewer than two samples.
func (r *rateSampler) rates() (put, get [3]float64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.mu.n < 2 {
		return put, get
	}
	sampleAt := func(back int) rateSample { // back 0 is the newest
		return r.mu.ring[(r.mu.next-1-back+2*len(r.mu.ring))%len(r.mu.ring)]
	}
	newest := sampleAt(0)
	for i, w := range rateWindows {
		back := 1
		for back < r.mu.n-1 && newest.at.Sub(sampleAt(back).at) < w {
			back++
		}
		old := sampleAt(back)
		secs := newest.at.Sub(old.at).Seconds()
		if secs <= 0 {
			continue
		}
		put[i] = float64(newest.put-old.put) / secs
		get[i] = float64(newest.get-old.get) / secs
	}
	return put, get
}

// tpsText is RocketMQ's form of the three rates: "10s 1min 10min".
func tpsText(r [3]float64) string { return fmt.Sprintf("%.2f %.2f %.2f", r[0], r[1], r[2]) }

// run samples the counts once a second until stop closes; it owns
// nothing but the sampler's feed.
func (r *rateSampler) run(now func() time.Time, put, get *atomic.Int64, stop <-chan struct{}) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	sample := func() { r.add(rateSample{at: now(), put: put.Load(), get: get.Load()}) }
	sample()
	for {
		select {
		case <-t.C:
			sample()
		case <-stop:
			return
		}
	}
}
