package client_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/samsamq/samsa/client"
	"github.com/samsamq/samsa/internal/freeport"
	"github.com/samsamq/samsa/loadgen/killloop"
	"github.com/samsamq/samsa/namesrv"
)

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// samsaBinary is $SAMSA_BIN (make test sets it), else cmd/samsa built
// once per test binary.
func samsaBinary(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("SAMSA_BIN"); p != "" {
		return p
	}
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "samsa-bin-")
		if err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(dir, "samsa")
		if out, err := exec.Command("go", "build", "-o", binPath, "github.com/samsamq/samsa/cmd/samsa").CombinedOutput(); err != nil {
			binErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// A broker process is killed with SIGKILL while a POP consumer pops and
// acknowledges: after the restart every message not acknowledged before
// the kill is handed out (the ones popped and held come back, their
// reconsume times raised), and none whose ack was answered is handed out
// again.
func TestPopBrokerKilled(t *testing.T) {
	bin := samsaBinary(t)
	ns, err := namesrv.New(namesrv.Options{Listen: "127.0.0.1:0", Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	if err := ns.Start(); err != nil {
		t.Fatal(err)
	}
	defer ns.Close()
	port, err := freeport.One()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	logPath := filepath.Join(dir, "broker.log")
	var proc *killloop.Proc
	start := func() {
		t.Helper()
		args := []string{"broker", "-n", ns.Addr(), "-dir", filepath.Join(dir, "store"), "-listen", "127.0.0.1",
			"-port", strconv.Itoa(port), "-admin", "off", "-flush", "async", "-log-level", "info",
			"-D", "brokerName=broker-a", "-D", "mappedFileSizeCommitLog=67108864"}
		if proc, err = killloop.StartProc("broker", bin, logPath, args); err != nil {
			t.Fatal(err)
		}
		if err := proc.WaitListening(killloop.Addr(port), time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	start()
	defer func() {
		if proc.Alive() {
			_ = proc.Kill(30 * time.Second)
		}
		if t.Failed() {
			tail, _ := killloop.Tail(logPath, 40)
			t.Logf("broker log:\n%s", tail)
		}
	}()
	opts := client.ClientOptions{NameServers: []string{ns.Addr()}, Logger: quietLog()}
	const topic, group, n = "pop-kill", "pop-kill-group", 300
	admin, err := client.NewAdmin(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = admin.Close() }()
	waitUntil(t, "the topic created", time.Minute, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return admin.CreateTopic(ctx, topic, client.TopicOptions{Queues: 8}) == nil
	})
	p, err := client.NewProducer(client.ProducerOptions{ClientOptions: opts})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for i := range n {
		if _, err := p.Send(context.Background(), &client.Message{Topic: topic, Body: []byte(strconv.Itoa(i))}); err != nil {
			t.Fatal(err)
		}
	}

	// Pop and acknowledge half of each batch, holding the rest, until
	// the kill ends the run.
	var mu sync.Mutex
	acked := map[string]bool{}  // acks the broker answered
	held := map[string]bool{}   // popped, not acknowledged
	unsure := map[string]bool{} // the ack's answer lost in the kill: applied or not
	pc, err := client.NewPopConsumer(client.PopConsumerOptions{ClientOptions: opts, Group: group, Topic: topic})
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		for {
			select {
			case <-stop:
				return
			default:
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			msgs, err := pc.Receive(ctx, 8, 3*time.Second)
			cancel()
			if err != nil {
				time.Sleep(10 * time.Millisecond)
				continue
			}
			for i, m := range msgs {
				mu.Lock()
				held[string(m.Body)] = true
				mu.Unlock()
				if i%2 == 1 {
					continue
				}
				err := pc.Ack(context.Background(), m)
				mu.Lock()
				delete(held, string(m.Body))
				if err == nil {
					acked[string(m.Body)] = true
				} else {
					unsure[string(m.Body)] = true
				}
				mu.Unlock()
			}
		}
	}()
	waitUntil(t, "half the messages popped", time.Minute, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(acked)+len(held)+len(unsure) >= n/2
	})
	if err := proc.Kill(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	close(stop)
	<-stopped
	_ = pc.Close()
	mu.Lock()
	t.Logf("killed with %d acknowledged, %d held and %d whose ack's answer was lost", len(acked), len(held), len(unsure))
	mu.Unlock()
	start()

	pc, err = client.NewPopConsumer(client.PopConsumerOptions{ClientOptions: opts, Group: group, Topic: topic})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = pc.Close() }()
	after := map[string]bool{}
	waitUntil(t, "every unacknowledged message handed out after the restart", 2*time.Minute, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		msgs, err := pc.Receive(ctx, 32, time.Minute)
		cancel()
		if err != nil {
			return false // the restarted broker's route comes back
		}
		for _, m := range msgs {
			b := string(m.Body)
			if acked[b] {
				t.Errorf("%s handed out again after its ack was answered", b)
			}
			if held[b] && m.ReconsumeTimes < 1 {
				t.Errorf("%s, held at the kill, handed out with reconsume times %d", b, m.ReconsumeTimes)
			}
			after[b] = true
		}
		if err := pc.AckAll(context.Background(), msgs); err != nil {
			t.Error(err)
		}
		for i := range n {
			if b := strconv.Itoa(i); !acked[b] && !after[b] && !unsure[b] {
				return false
			}
		}
		return true
	})
	var lost []string
	for i := range n {
		if b := strconv.Itoa(i); !acked[b] && !after[b] && !unsure[b] {
			lost = append(lost, b)
		}
	}
	if len(lost) > 0 {
		t.Fatalf("%d messages never handed out after the restart: %v", len(lost), lost)
	}
	t.Logf("after the restart: %d handed out (%d of them held at the kill)", len(after), len(held))
}

func waitUntil(t *testing.T, what string, d time.Duration, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(d); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
	}
}
