package chaos

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/samsamq/samsa/client"
	"github.com/samsamq/samsa/loadgen/killloop"
	"github.com/samsamq/samsa/protocol"
)

// sample is the role sampler: each broker's controller_role and
// controller_master_epoch every 100 ms until stop. A broker that does not
// answer (down, paused) is not sampled.
func (ld *load) sample(stop <-chan struct{}, a *client.Admin, brokers []string) {
	for {
		for _, b := range brokers {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			st, err := a.BrokerStats(ctx, b, "ha")
			cancel()
			if err != nil {
				continue
			}
			if s, ok := roleOf(b, st, time.Now()); ok {
				ld.mu.Lock()
				ld.mu.samples = append(ld.mu.samples, s)
				ld.mu.Unlock()
			}
		}
		if killloop.Wait(stop, 100*time.Millisecond) {
			return
		}
	}
}

// brokerRole is a broker's controller-mode state from its `stats ha`.
type brokerRole struct {
	master, writable bool
	epoch            int64
	syncSet          int // members of the sync-state set it reports
}

func roleStateOf(st []protocol.Stat) (brokerRole, bool) {
	var r brokerRole
	found := false
	for _, s := range st {
		switch s.Name {
		case "controller_role":
			r.master, found = s.Value == "master", true
		case "controller_master_epoch":
			r.epoch, _ = strconv.ParseInt(s.Value, 10, 64)
		case "controller_writable":
			r.writable = s.Value == "1"
		case "controller_sync_set":
			v, _ := strconv.Unquote(s.Value)
			if v != "" {
				r.syncSet = len(strings.Split(v, ","))
			}
		}
	}
	return r, found
}

func roleOf(broker string, st []protocol.Stat, at time.Time) (RoleSample, bool) {
	r, ok := roleStateOf(st)
	return RoleSample{Broker: broker, Master: r.master, Epoch: r.epoch, At: at}, ok
}

func (ld *load) samplesCopy() []RoleSample {
	ld.mu.Lock()
	defer ld.mu.Unlock()
	return slices.Clone(ld.mu.samples)
}
