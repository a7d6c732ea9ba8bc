package storage

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/samsamq/samsa/storage/record"
	"github.com/samsamq/samsa/storage/vfs"
)

// BenchmarkAppendKeyed appends 1 KiB messages with KEYS and UNIQ_KEY on
// the OS file system (async flush) and waits until the dispatcher has
// indexed them: what the key index costs the dispatcher (index=off/on).
func BenchmarkAppendKeyed(b *testing.B) {
	for _, on := range []bool{false, true} {
		b.Run(fmt.Sprintf("index=%v", map[bool]string{false: "off", true: "on"}[on]), func(b *testing.B) {
			opts := Options{Dir: b.TempDir(), FS: vfs.Default, SegmentSize: 256 << 20, Logger: quietLogger(),
				MessageIndex: MessageIndexOptions{Disabled: !on},
				Retention:    RetentionOptions{MaxAge: -1, DiskRatio: -1, CheckInterval: time.Hour}}
			s := mustOpen(b, opts)
			defer s.Close()
			msgs := make([]*Message, 64)
			for i := range msgs {
				m := testMessage("bench", int32(i%4), 1024)
				m.Properties = record.AppendProperty(m.Properties, record.PropertyKeys, fmt.Sprintf("order-%d", i))
				m.Properties = record.AppendProperty(m.Properties, PropertyUniqKey, fmt.Sprintf("7F0000010000%020d", i))
				msgs[i] = m
			}
			b.SetBytes(int64(len(msgs[0].Body)))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := s.Append(context.Background(), msgs[i%len(msgs)]); err != nil {
					b.Fatal(err)
				}
			}
			waitDispatched(b, s)
			if on {
				waitKeyIndexed(b, s)
			}
		})
	}
}
