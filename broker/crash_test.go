package broker

import (
	"bufio"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/samsamq/samsa/protocol"
)

// brokerChild runs a SYNC_FLUSH broker on SAMSA_DIR, prints "ADDR
// host:port" and serves until SIGTERM (clean close) or SIGKILL.
func brokerChild() error {
	cfg := Config{StorePathRootDir: os.Getenv("SAMSA_DIR"), FlushDiskType: SyncFlush, AdminListen: "off",
		MappedFileSizeCommitLog: 1 << 20,
		Logger:                  slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))}
	_ = cfg.Set("listenPort", "0")
	txnChildConfig(&cfg)                                                     // txn_crash_test.go
	for _, kv := range strings.Split(os.Getenv("SAMSA_BROKER_PROPS"), ";") { // key=value;... (schedule_crash_test.go)
		if k, v, ok := strings.Cut(kv, "="); ok {
			if err := cfg.Set(k, v); err != nil {
				return err
			}
		}
	}
	b, err := New(cfg)
	if err != nil {
		return err
	}
	if err := b.Start(); err != nil {
		return err
	}
	fmt.Printf("ADDR %s\n", b.Addr())
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
	return b.Close()
}

type childBroker struct {
	cmd  *exec.Cmd
	addr string
}

func startChildBroker(t *testing.T, dir string, env ...string) *childBroker {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=broker", "SAMSA_DIR="+dir)
	cmd.Env = append(cmd.Env, env...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	addrc := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if a, ok := strings.CutPrefix(sc.Text(), "ADDR "); ok {
				addrc <- a
				break
			}
		}
		io.Copy(io.Discard, out)
	}()
	select {
	case a := <-addrc:
		return &childBroker{cmd: cmd, addr: a}
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		t.Fatal("child broker did not start")
	}
	return nil
}

// TestCrashRestartKeepsAcknowledged: a SYNC_FLUSH broker in a child
// process is killed with SIGKILL while producers send; after a restart on
// the same directory every acknowledged message is consumable, each queue
// holds consecutive offsets, and a clean SIGTERM stop after that loses
// nothing either.
func TestCrashRestartKeepsAcknowledged(t *testing.T) {
	dir := t.TempDir()
	child := startChildBroker(t, dir)
	ctl := dialRaw(t, child.addr)
	if r := ctl.call(createTopicReq("crash", 4)); r.Code != protocol.Success {
		t.Fatal(r)
	}

	const senders, killAfter = 4, 1500
	var mu sync.Mutex
	acked := make(map[string]bool)
	killed := make(chan struct{})
	var once sync.Once
	var wg sync.WaitGroup
	for s := 0; s < senders; s++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := dialRaw(t, child.addr)
			for i := 0; ; i++ {
				body := fmt.Sprintf("s%d-%d", s, i)
				select {
				case r := <-p.start(sendReq("crash", int32(s), []byte(body), map[string]string{"KEYS": body})):
					if r.Code != protocol.Success {
						t.Errorf("send %s: %s", body, r)
						return
					}
					mu.Lock()
					acked[body] = true
					n := len(acked)
					mu.Unlock()
					if n >= killAfter {
						once.Do(func() {
							child.cmd.Process.Signal(syscall.SIGKILL)
							close(killed)
						})
					}
				case <-p.dead:
					return // the broker died
				case <-time.After(30 * time.Second):
					t.Errorf("send %s: no answer", body)
					return
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
	mu.Lock()
	want := len(acked)
	mu.Unlock()

	child = startChildBroker(t, dir)
	got := pullAllBodies(t, child.addr, "crash", senders)
	for body := range acked {
		if !got[body] {
			t.Fatalf("acknowledged message %s lost after kill -9 (%d acknowledged, %d recovered)", body, want, len(got))
		}
	}
	t.Logf("%d acknowledged before kill -9, %d recovered", want, len(got))

	// A clean stop (SIGTERM) keeps everything too, and writes the clean
	// marker.
	child.cmd.Process.Signal(syscall.SIGTERM)
	if err := child.cmd.Wait(); err != nil {
		t.Fatalf("clean stop: %v", err)
	}
	child = startChildBroker(t, dir)
	defer func() {
		child.cmd.Process.Signal(syscall.SIGTERM)
		child.cmd.Wait()
	}()
	if again := pullAllBodies(t, child.addr, "crash", senders); len(again) != len(got) {
		t.Fatalf("after a clean restart %d messages, before %d", len(again), len(got))
	}
}

// pullAllBodies pulls every queue of topic from 0, checking consecutive
// offsets, and returns the bodies.
func pullAllBodies(t *testing.T, addr, topic string, queues int32) map[string]bool {
	t.Helper()
	c := dialRaw(t, addr)
	got := make(map[string]bool)
	for q := int32(0); q < queues; q++ {
		for off := int64(0); ; {
			r := c.call(pullReq("checker", topic, q, off, 256, 0, "*"))
			if r.Code == protocol.PullNotFound {
				break
			}
			if r.Code != protocol.Success {
				t.Fatalf("pull %d@%d: %s", q, off, r)
			}
			for _, rec := range decodeRecords(t, r.Body) {
				if rec.QueueOffset != off {
					t.Fatalf("queue %d: offset %d where %d expected", q, rec.QueueOffset, off)
				}
				off++
				got[string(rec.Body)] = true
			}
		}
	}
	return got
}
