package ha

import (
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// lagRing remembers when the master's handed offset grew, so a slave's
// lag can be told in time as well as bytes: a slave acknowledged up to A
// is behind by how long ago the handed offset passed A.
//
// A sample (from, at) says that at time at the handed offset rose above
// from. At most one sample is kept per lagPeriod (the first growth after
// the period), so for the newest sample with from <= A the handed offset
// passed A within lagPeriod after its at: the answer errs by at most
// lagPeriod, upwards. The ring covers lagSamples periods of continuous
// growth; a slave behind that gets the oldest sample's age, a lower
// bound.
type lagRing struct {
	lastAt atomic.Int64 // at of the newest sample: the lock-free skip
	mu     sync.Mutex
	buf    [lagSamples]lagSample
	n      int // samples held
	next   int // where the next sample goes
}

type lagSample struct {
	from int64 // handed offset before the growth
	at   int64 // when (Master.now())
}

const (
	lagSamples = 1024
	lagPeriod  = int64(100 * time.Millisecond)
)

// note records that at time at the handed offset grew from from, unless a
// sample was taken less than lagPeriod before.
func (r *lagRing) note(from, at int64) {
	if at-r.lastAt.Load() < lagPeriod {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if at-r.lastAt.Load() < lagPeriod {
		return
	}
	r.lastAt.Store(at)
	r.buf[r.next] = lagSample{from, at}
	r.next = (r.next + 1) % lagSamples
	r.n = min(r.n+1, lagSamples)
}

func (r *lagRing) init() { r.lastAt.Store(math.MinInt64 / 2) }

// lag returns how long ago (before now) the handed offset passed ack;
// since is the age of everything before the first sample (how long the
// master has run).
func (r *lagRing) lag(ack, now, since int64) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.n == 0 {
		return time.Duration(since)
	}
	i := (r.next + lagSamples - 1) % lagSamples
	for k := 0; k < r.n; k++ {
		if s := r.buf[i]; s.from <= ack {
			return time.Duration(now - s.at)
		}
		i = (i + lagSamples - 1) % lagSamples
	}
	// Passed before the oldest sample.
	return time.Duration(now - r.buf[(r.next+lagSamples-r.n)%lagSamples].at)
}
