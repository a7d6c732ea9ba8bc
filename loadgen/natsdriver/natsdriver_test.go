package natsdriver

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/samsamq/samsa/loadgen"
)

func TestRunAgainstEmbeddedJetStream(t *testing.T) {
	for _, tc := range []struct {
		name     string
		sync     bool
		perQueue bool
		w        loadgen.Workload
	}{
		{"default-async-longpoll", false, false, loadgen.Workload{SendMode: loadgen.SendAsync, QueuesPerTopic: 4, Rate: 2000}},
		// A stream per queue, two consumers splitting the streams.
		{"stream-per-queue", false, true, loadgen.Workload{SendMode: loadgen.SendAsync, QueuesPerTopic: 5, Consumers: 2, Rate: 2000}},
		// One sync producer waits an fsync per message: a rate a slow
		// disk holds, since every message due in the window is sent.
		{"always-sync-pull", true, false, loadgen.Workload{SendMode: loadgen.SendSync, ConsumeMode: loadgen.ConsumePull, PullInterval: 10 * time.Millisecond, Rate: 100}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := New(Options{StoreDir: t.TempDir(), Sync: tc.sync, StreamPerQueue: tc.perQueue})
			require.NoError(t, err)
			defer d.Close()
			w := tc.w
			w.MessageSize = 256
			w.Warmup = 200 * time.Millisecond
			w.Duration = time.Second
			w.ReportInterval = 500 * time.Millisecond
			w.Drain = 5 * time.Second
			var out bytes.Buffer
			res, err := loadgen.Run(context.Background(), d, w, loadgen.Options{Out: &out})
			require.NoError(t, err, out.String())
			require.Zero(t, res.Errors)
			// With fsync before every ack one sync producer gets one
			// fsync's worth per message: how many is the disk's business.
			require.Greater(t, res.Acked, int64(20))
			require.True(t, res.Drained, "consumers caught up: %d of %d", res.Received, res.Acked)
			require.GreaterOrEqual(t, res.Received, res.Acked)
			if tc.perQueue {
				require.Equal(t, "a stream per queue", d.Describe()["mapping"])
				n := 0
				for range d.js.StreamNames(context.Background()).Name() {
					n++
				}
				require.Equal(t, 5, n)
			}
			if tc.sync {
				require.Equal(t, "always", d.Describe()["sync_interval"])
			} else {
				require.NotEqual(t, "always", d.Describe()["sync_interval"])
			}
		})
	}
}

// TestRemoveStoreDir: a store directory given with RemoveStoreDir is gone
// after Close (the lab gives each cell one); one given without it stays.
func TestRemoveStoreDir(t *testing.T) {
	for _, remove := range []bool{true, false} {
		dir := filepath.Join(t.TempDir(), "js")
		require.NoError(t, os.Mkdir(dir, 0o755))
		d, err := New(Options{StoreDir: dir, RemoveStoreDir: remove})
		require.NoError(t, err)
		require.NoError(t, d.CreateTopic(context.Background(), "t", 1))
		require.NoError(t, d.Close())
		_, err = os.Stat(dir)
		if remove {
			require.True(t, os.IsNotExist(err), "store dir still there: %v", err)
		} else {
			require.NoError(t, err, "store dir removed without RemoveStoreDir")
		}
	}
}
