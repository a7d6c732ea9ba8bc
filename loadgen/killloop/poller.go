package killloop

import "time"

// Poller calls a function at every tick of a ticker, on a goroutine of
// its own, until Stop: the body of a run's samplers and watchers.
type Poller struct {
	stop chan struct{}
	done chan struct{} // closed when the goroutine has returned
}

// StartPoller starts calling tick every d with the tick's time. The
// ticker drops the ticks tick was too slow to take.
func StartPoller(d time.Duration, tick func(now time.Time)) *Poller {
	p := &Poller{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		t := time.NewTicker(d)
		defer t.Stop()
		for {
			select {
			case <-p.stop:
				return
			case now := <-t.C:
				tick(now)
			}
		}
	}()
	return p
}

// Stop ends the ticks and waits until tick has returned for the last
// time. Call it once.
func (p *Poller) Stop() {
	close(p.stop)
	<-p.done
}
