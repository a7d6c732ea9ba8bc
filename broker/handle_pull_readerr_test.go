package broker

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/samsamq/samsa/protocol"
)

// TestPullReadErrorIsReported: a segment file truncated behind a running
// broker's back makes pulls there fail; each is counted and the broker
// logs it at Error (once per distinct error a minute), so a consumer that
// stalls on it is never silent on the broker's side.
func TestPullReadErrorIsReported(t *testing.T) {
	const topic = "re"
	logs := &lockedLog{}
	b := startBroker(t, "", func(c *Config) {
		c.MappedFileSizeCommitLog = 1 << 20
		c.Logger = slog.New(slog.NewTextHandler(logs, nil))
	})
	defer b.Close()
	rc := dialRaw(t, b.Addr())
	rc.call(createTopicReq(topic, 1))
	body := strings.Repeat("z", 40<<10)
	for i := range 40 { // past the first 1 MiB segment
		if r := rc.call(sendReq(topic, 0, []byte(fmt.Sprintf("%02d-%s", i, body)), nil)); r.Code != protocol.Success {
			t.Fatalf("send %d: %s", i, r)
		}
	}
	waitFor(t, func() bool { return b.store.MaxQueueOffset(topic, 0) == 40 }, "all dispatched")
	seg := filepath.Join(b.cfg.StorePathRootDir, "commitlog", fmt.Sprintf("%020d", 0))
	if err := os.Truncate(seg, 1000); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if r := rc.call(pullReq("g", topic, 0, 5, 1, 0, "*")); r.Code != protocol.SystemError {
			t.Fatalf("pull past the truncation: %s, want SYSTEM_ERROR", r)
		}
	}
	if n := b.stats.readErrors.Load(); n != 3 {
		t.Fatalf("%d read errors counted, want 3", n)
	}
	if got := strings.Count(logs.String(), "a pull could not read the store"); got != 1 {
		t.Fatalf("%d Error lines for 3 failed pulls with one error, want 1:\n%s", got, logs.String())
	}
}
