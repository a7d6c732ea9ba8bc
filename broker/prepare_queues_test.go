package broker

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/samsamq/samsa/protocol"
)

// TestCreateTopicPreparesQueueFiles: creating a wide topic makes its
// queues' ConsumeQueue files then, not on the dispatcher's path at each
// queue's first message; a narrow one costs no file until it is written.
func TestCreateTopicPreparesQueueFiles(t *testing.T) {
	b := startBroker(t, "", nil)
	defer b.Close()
	c := dialRaw(t, b.Addr())
	wide := int32(prepareQueuesFrom)
	if r := c.call(createTopicReq("prepared", wide)); r.Code != protocol.Success {
		t.Fatalf("create topic: %d %s", r.Code, r.Remark)
	}
	if r := c.call(createTopicReq("narrow", 3)); r.Code != protocol.Success {
		t.Fatalf("create topic: %d %s", r.Code, r.Remark)
	}
	cq := filepath.Join(b.Store().Options().Dir, "consumequeue")
	for q := range wide {
		p := filepath.Join(cq, "prepared", fmt.Sprint(q), "00000000000000000000")
		if _, err := os.Stat(p); err != nil {
			t.Errorf("queue %d: %v", q, err)
		}
	}
	if _, err := os.Stat(filepath.Join(cq, "narrow")); !os.IsNotExist(err) {
		t.Errorf("a narrow topic's queue directory exists before any message: %v", err)
	}
}
