package broker

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/samsamq/samsa/controller"
)

// fakeController is the fail-over controller in process: a
// controller.Machine behind a mutex on real time, with a goroutine that
// applies the elections Tick proposes. Brokers reach it through
// fakeCtlClient; cut(id) makes one broker's calls fail (a partition).
type fakeController struct {
	t    testing.TB
	mu   sync.Mutex
	m    *controller.Machine
	cut  map[int64]bool
	log  []string // every result that changed the state, in order
	stop chan struct{}
	done chan struct{}
}

func newFakeController(t testing.TB, electionTimeout time.Duration) *fakeController {
	m, err := controller.New(controller.Config{ElectionTimeout: electionTimeout})
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeController{t: t, m: m, cut: map[int64]bool{}, stop: make(chan struct{}), done: make(chan struct{})}
	go f.tick()
	t.Cleanup(f.close)
	return f
}

// tick is the controller leader's election loop: every 20 ms it applies
// what Tick proposes. Ends at close.
func (f *fakeController) tick() {
	defer close(f.done)
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-f.stop:
			return
		case <-t.C:
		}
		f.mu.Lock()
		now := time.Now()
		for _, e := range f.m.Tick(now) {
			if r, err := f.m.Apply(e, now); err == nil && r.Changed {
				f.log = append(f.log, r.String())
			}
		}
		f.mu.Unlock()
	}
}

func (f *fakeController) close() {
	select {
	case <-f.stop:
	default:
		close(f.stop)
	}
	<-f.done
}

func (f *fakeController) setCut(id int64, on bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cut[id] = on
}

// show is the group's state.
func (f *fakeController) show(g controller.Group) controller.Result {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, _ := f.m.State().Show(g)
	return r
}

func (f *fakeController) apply(id int64, cmd controller.Command) (controller.Result, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.cut[id] {
		return controller.Result{}, fmt.Errorf("fake controller: broker %d is cut off", id)
	}
	r, err := f.m.Apply(cmd, time.Now())
	if err == nil && r.Changed {
		f.log = append(f.log, r.String())
	}
	return r, err
}

func (f *fakeController) client(id int64) controllerClient { return &fakeCtlClient{f: f, id: id} }

type fakeCtlClient struct {
	f  *fakeController
	id int64
}

func (c *fakeCtlClient) RegisterBroker(_ context.Context, cmd controller.RegisterBroker) (controller.Result, error) {
	return c.f.apply(c.id, cmd)
}

func (c *fakeCtlClient) Heartbeat(_ context.Context, cmd controller.Heartbeat) (controller.Result, error) {
	return c.f.apply(c.id, cmd)
}

func (c *fakeCtlClient) AlterSyncStateSet(_ context.Context, cmd controller.AlterSyncStateSet) (controller.Result, error) {
	return c.f.apply(c.id, cmd)
}

func (c *fakeCtlClient) Close() error { return nil }
