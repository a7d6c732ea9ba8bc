package broker

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/samsamq/samsa/protocol"
)

// TestCreateTopicPreparesQueueFiles: creating a topic makes its queues'
// ConsumeQueue files then, not on the dispatcher's path at each queue's
// first message.
func TestCreateTopicPreparesQueueFiles(t *testing.T) {
	b := startBroker(t, "", nil)
	defer b.Close()
	c := dialRaw(t, b.Addr())
	if r := c.call(createTopicReq("prepared", 3)); r.Code != protocol.Success {
		t.Fatalf("create topic: %d %s", r.Code, r.Remark)
	}
	for q := range 3 {
		p := filepath.Join(b.Store().Options().Dir, "consumequeue", "prepared", string(rune('0'+q)), "00000000000000000000")
		if _, err := os.Stat(p); err != nil {
			t.Errorf("queue %d: %v", q, err)
		}
	}
}
