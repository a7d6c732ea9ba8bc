package broker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/samsamq/samsa/client"
	"github.com/samsamq/samsa/internal/freeport"
	"github.com/samsamq/samsa/namesrv"
	"github.com/samsamq/samsa/protocol"
)

// txnChildConfig applies the transaction crash test's settings to a child
// broker: SAMSA_NS (name server), SAMSA_PORT (a fixed port, kept across
// restarts) and SAMSA_TXN_MS (check interval and transaction timeout).
func txnChildConfig(cfg *Config) {
	if ns := os.Getenv("SAMSA_TXN_NS"); ns != "" {
		cfg.NamesrvAddrs = []string{ns}
	}
	if p := os.Getenv("SAMSA_TXN_PORT"); p != "" {
		_ = cfg.Set("listenPort", p)
		_ = cfg.Set("haListenPort", "0")
	}
	if ms := os.Getenv("SAMSA_TXN_MS"); ms != "" {
		_ = cfg.Set("transactionCheckInterval", ms)
		_ = cfg.Set("transactionTimeOut", ms)
		_ = cfg.Set("transactionCheckMax", "1000") // rounds before the producer is back count too
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	p, err := freeport.One()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// bodyCounts pulls every queue of topic and counts each body.
func bodyCounts(t *testing.T, addr, topic string, queues int32, into map[string]int) {
	t.Helper()
	c := dialRaw(t, addr)
	for q := int32(0); q < queues; q++ {
		for off := int64(0); ; {
			r := c.call(pullReq("checker", topic, q, off, 256, 0, "*"))
			if r.Code != protocol.Success {
				break
			}
			recs := decodeRecords(t, r.Body)
			for _, rec := range recs {
				into[string(rec.Body)]++
			}
			off += int64(len(recs))
		}
	}
}

// TestTxnCrashMidCommitAllOrNothing: producers of Samsa's client run
// transactions of three messages over two topics against a SYNC_FLUSH
// broker in a child process, which is killed with SIGKILL while they
// commit and roll back. After a restart on the same directory and port,
// the check-backs settle what was left open: every transaction ends all
// or nothing, as its producer decided, each message delivered once.
func TestTxnCrashMidCommitAllOrNothing(t *testing.T) {
	ns, err := namesrv.New(namesrv.Options{Listen: "127.0.0.1:0", Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	if err := ns.Start(); err != nil {
		t.Fatal(err)
	}
	defer ns.Close()
	dir := t.TempDir()
	t.Setenv("SAMSA_TXN_NS", ns.Addr())
	t.Setenv("SAMSA_TXN_PORT", strconv.Itoa(freePort(t)))
	t.Setenv("SAMSA_TXN_MS", "200")
	child := startChildBroker(t, dir)
	ctl := dialRaw(t, child.addr)
	for _, tq := range []struct {
		topic  string
		queues int32
	}{{"cra", 4}, {"crb", 2}} {
		if r := ctl.call(createTopicReq(tq.topic, tq.queues)); r.Code != protocol.Success {
			t.Fatal(r)
		}
	}
	p, err := client.NewTransactionProducer(client.ProducerOptions{ClientOptions: client.ClientOptions{NameServers: []string{ns.Addr()},
		Logger: quietLogger(), HeartbeatInterval: 200 * time.Millisecond, RouteRefresh: time.Second}, Group: "crash-pg"},
		client.TransactionOptions{ConfirmEnd: true, Checker: func(context.Context, string, *client.MessageExt) client.TransactionState {
			return client.TransactionRollback // what this producer does not remember never committed
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	deadline := time.Now().Add(10 * time.Second)
	for { // the topics' route
		if _, err := p.Send(context.Background(), &client.Message{Topic: "crb", Body: []byte("warm-up")}); err == nil {
			break
		} else if time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
	}

	const workers, killAfter = 4, 150
	var mu sync.Mutex
	decided := map[string]client.TransactionState{} // body prefix -> outcome
	var commits, unconfirmed atomic.Int64
	killed := make(chan struct{})
	var once sync.Once
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				name := fmt.Sprintf("w%d-%d", w, i)
				want := client.TransactionCommit
				if i%3 == 2 {
					want = client.TransactionRollback
				}
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				_, s, err := p.SendInTransaction(ctx, func(context.Context, *client.Transaction) (client.TransactionState, error) {
					mu.Lock()
					decided[name] = want
					mu.Unlock()
					return want, nil
				}, &client.Message{Topic: "cra", Body: []byte(name + "/1")}, &client.Message{Topic: "crb", Body: []byte(name + "/2")},
					&client.Message{Topic: "cra", Body: []byte(name + "/3")})
				cancel()
				if err != nil {
					if errors.Is(err, client.ErrTransactionUnconfirmed) {
						unconfirmed.Add(1)
					}
					mu.Lock()
					if _, ok := decided[name]; !ok {
						decided[name] = client.TransactionRollback // a send failed: rolled back
					}
					mu.Unlock()
					if !errors.Is(err, client.ErrTransactionUnconfirmed) && s == client.TransactionCommit {
						t.Errorf("%s: %v", name, err)
					}
					select {
					case <-killed:
						return
					default:
					}
					continue
				}
				if s == client.TransactionCommit && commits.Add(1) == killAfter {
					once.Do(func() {
						child.cmd.Process.Signal(syscall.SIGKILL)
						close(killed)
					})
				}
			}
		}()
	}
	select {
	case <-killed:
	case <-time.After(2 * time.Minute):
		t.Fatal("never reached the kill point")
	}
	wg.Wait()
	child.cmd.Wait()

	child = startChildBroker(t, dir)
	defer func() {
		child.cmd.Process.Signal(syscall.SIGTERM)
		child.cmd.Wait()
	}()
	check := func() (missing string, err error) {
		got := map[string]int{}
		bodyCounts(t, child.addr, "cra", 4, got)
		bodyCounts(t, child.addr, "crb", 2, got)
		mu.Lock()
		defer mu.Unlock()
		for name, s := range decided {
			for _, part := range []string{"/1", "/2", "/3"} {
				n := got[name+part]
				switch {
				case n > 1:
					return "", fmt.Errorf("%s%s delivered %d times", name, part, n)
				case s == client.TransactionRollback && n != 0:
					return "", fmt.Errorf("%s%s of a rolled-back transaction delivered", name, part)
				case s == client.TransactionCommit && n == 0:
					missing = name + part
				}
			}
		}
		return missing, nil
	}
	deadline = time.Now().Add(30 * time.Second)
	for {
		missing, err := check()
		if err != nil {
			t.Fatal(err)
		}
		if missing == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("committed %s never delivered after the restart", missing)
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(time.Second) // more check rounds: nothing more arrives
	if _, err := check(); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d transactions decided, %d committed before kill -9, %d ends unconfirmed (settled by check-backs)",
		len(decided), commits.Load(), unconfirmed.Load())
}
