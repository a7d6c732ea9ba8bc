package xa

import (
	"bytes"
	"context"
	"fmt"
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

// brokerProc runs broker-a as a process on a fixed port and data dir.
type brokerProc struct {
	t       *testing.T
	bin     string
	dir     string
	ns      string
	port    int
	p       *killloop.Proc
	logPath string
}

func (b *brokerProc) addr() string { return killloop.Addr(b.port) }

func (b *brokerProc) start() {
	b.t.Helper()
	args := []string{"broker", "-n", b.ns, "-dir", filepath.Join(b.dir, "store"), "-listen", "127.0.0.1",
		"-port", strconv.Itoa(b.port), "-admin", "off", "-flush", "async", "-log-level", "info",
		"-D", "brokerName=broker-a", "-D", "mappedFileSizeCommitLog=67108864",
		// Check-backs every 200 ms, a half discarded after one: halves
		// not held by a branch go within a second.
		"-D", "transactionTimeOut=200", "-D", "transactionCheckInterval=200", "-D", "transactionCheckMax=1"}
	p, err := killloop.StartProc("broker", b.bin, b.logPath, args)
	if err != nil {
		b.t.Fatal(err)
	}
	b.p = p
	if err := p.WaitListening(b.addr(), time.Minute); err != nil {
		b.t.Fatal(err)
	}
}

func (b *brokerProc) kill() {
	b.t.Helper()
	if err := b.p.Kill(30 * time.Second); err != nil {
		b.t.Logf("kill: %v", err)
	}
}

// TestBrokerKilledHoldingPreparedBranches: a broker process holding five
// prepared branches (and one ended, not prepared) is killed with SIGKILL
// and started again. Recover lists the five; none of their messages is
// visible; the unprepared branch's messages are discarded by the
// check-back (the prepared ones, older, are passed over); commit of three
// and rollback of two deliver the three branches' messages exactly once,
// and a second kill and restart changes nothing.
func TestBrokerKilledHoldingPreparedBranches(t *testing.T) {
	bin := samsaBinary(t)
	ns, err := namesrv.New(namesrv.Options{Listen: "127.0.0.1:0", Logger: quiet()})
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
	b := &brokerProc{t: t, bin: bin, dir: dir, ns: ns.Addr(), port: port, logPath: filepath.Join(dir, "broker.log")}
	b.start()
	defer func() {
		if b.p.Alive() {
			b.kill()
		}
		if t.Failed() {
			tail, _ := killloop.Tail(b.logPath, 40)
			t.Logf("broker log:\n%s", tail)
		}
	}()
	topic := "xa-kill"
	createTopic(t, ns.Addr(), topic)
	p, err := client.NewProducer(client.ProducerOptions{ClientOptions: client.ClientOptions{NameServers: []string{ns.Addr()}, Logger: quiet()}, Group: "xa-kill"})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	r := p.XAResource("broker-a")
	ctx := context.Background()
	xids := make([]client.XID, 6)
	for i := range xids {
		xids[i] = client.XID{FormatID: 7, GTRID: []byte(fmt.Sprintf("global-%d", i)), BQUAL: []byte("broker-a")}
		if err := r.Start(ctx, xids[i], client.TMNoFlags); err != nil {
			t.Fatal(err)
		}
		for j := range 3 {
			if _, err := r.Send(ctx, xids[i], &client.Message{Topic: topic, Body: []byte(fmt.Sprintf("m-%d-%d", i, j))}); err != nil {
				t.Fatal(err)
			}
		}
		if err := r.End(ctx, xids[i], client.TMSuccess); err != nil {
			t.Fatal(err)
		}
		if i == 5 {
			break // ended, not prepared
		}
		if rc, err := r.Prepare(ctx, xids[i]); err != nil || rc != client.XAOK {
			t.Fatalf("prepare %d: %d, %v", i, rc, err)
		}
	}
	b.kill()
	b.start()
	var prepared []client.XAPrepared
	waitFor(t, "the restarted broker's answer to recover", time.Minute, func() bool {
		prepared, err = r.Recover(ctx)
		return err == nil
	})
	if len(prepared) != 5 {
		t.Fatalf("recover after kill -9 lists %d branches, want 5: %+v", len(prepared), prepared)
	}
	for i, pb := range prepared {
		if pb.XID.String() != xids[i].String() || pb.Messages != 3 {
			t.Fatalf("branch %d: %+v, want %s with 3 messages", i, pb, xids[i])
		}
	}
	// samsa txn list names them too.
	out, err := exec.Command(bin, "txn", "list", "-n", ns.Addr(), "--json").CombinedOutput()
	if err != nil {
		t.Fatalf("samsa txn list: %v\n%s", err, out)
	}
	for i := range 5 {
		if !bytes.Contains(out, []byte(xids[i].String())) {
			t.Fatalf("samsa txn list does not name %s:\n%s", xids[i], out)
		}
	}
	// The unprepared branch's halves, sent last, are discarded by the
	// check-back: the rounds passed the held ones.
	waitFor(t, "the unprepared branch's messages discarded", 2*time.Minute, func() bool {
		log, _ := os.ReadFile(b.logPath)
		return bytes.Count(log, []byte("half message discarded to TRANS_CHECK_MAX_TIME_TOPIC")) >= 3
	})
	if got := visible(t, ns.Addr(), topic); len(got) != 0 {
		t.Fatalf("messages of uncommitted branches are visible: %v", got)
	}
	if prepared, _ = r.Recover(ctx); len(prepared) != 5 {
		t.Fatalf("after the check-backs, recover lists %d branches, want 5", len(prepared))
	}
	for i := range 5 {
		if i < 3 {
			err = r.Commit(ctx, xids[i], false)
		} else {
			err = r.Rollback(ctx, xids[i])
		}
		if err != nil {
			t.Fatalf("settle %d: %v", i, err)
		}
	}
	if err := r.Commit(ctx, xids[0], false); !client.IsXACode(err, client.XAErrNoTA) {
		t.Fatalf("a second commit: %v, want XAER_NOTA", err)
	}
	if err := r.Commit(ctx, xids[5], false); !client.IsXACode(err, client.XAErrNoTA) {
		t.Fatalf("commit of the branch forgotten by the restart: %v, want XAER_NOTA", err)
	}
	check := func() {
		t.Helper()
		var got map[string]int
		waitFor(t, "the committed messages", time.Minute, func() bool {
			got = visible(t, ns.Addr(), topic)
			return len(got) >= 9
		})
		for i := range 6 {
			for j := range 3 {
				k := fmt.Sprintf("m-%d-%d", i, j)
				if want := map[bool]int{true: 1, false: 0}[i < 3]; got[k] != want {
					t.Errorf("%s delivered %d times, want %d", k, got[k], want)
				}
			}
		}
		if len(got) != 9 {
			t.Errorf("%d distinct messages visible, want 9: %v", len(got), got)
		}
	}
	check()
	b.kill()
	b.start()
	waitFor(t, "the restarted broker's answer to recover", time.Minute, func() bool {
		prepared, err = r.Recover(ctx)
		return err == nil
	})
	if len(prepared) != 0 {
		t.Fatalf("settled branches listed after a second restart: %+v", prepared)
	}
	check()
}
