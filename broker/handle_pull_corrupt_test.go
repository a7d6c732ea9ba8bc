package broker

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/samsamq/samsa/protocol"
	"github.com/samsamq/samsa/storage/record"
)

// TestPullNeverServesCorruptRecord damages a stored body byte while the
// broker is stopped (after a clean Close, so no recovery scan sees it) and
// pulls over it: the records before it are served, the pull at it is
// answered PULL_OFFSET_MOVED past it with a remark naming it, the records
// after it are reachable, and the metrics count it.
func TestPullNeverServesCorruptRecord(t *testing.T) {
	const topic, n, victim = "ct", 10, 4
	dir := t.TempDir()
	b := startBroker(t, dir, nil)
	c := dialRaw(t, b.Addr())
	c.call(createTopicReq(topic, 1))
	for i := 0; i < n; i++ {
		if r := c.call(sendReq(topic, 0, []byte(fmt.Sprintf("body-%02d-%s", i, strings.Repeat("x", 200))), nil)); r.Code != protocol.Success {
			t.Fatalf("send %d: %s", i, r)
		}
	}
	waitFor(t, func() bool { return b.store.MaxQueueOffset(topic, 0) == n }, "all dispatched")
	r := c.call(pullReq("g", topic, 0, 0, 32, 0, "*"))
	recs := decodeRecords(t, r.Body)
	if r.Code != protocol.Success || len(recs) != n {
		t.Fatalf("pull before the damage: %s, %d records", r, len(recs))
	}
	phys := recs[victim].PhysOffset
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}

	// Flip one body byte of the victim in its segment file.
	seg := filepath.Join(dir, "commitlog", fmt.Sprintf("%020d", phys/(4<<20)*(4<<20)))
	f, err := os.OpenFile(seg, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	at := phys%(4<<20) + 100 // inside the body, which starts at byte 88
	buf := make([]byte, 1)
	if _, err := f.ReadAt(buf, at); err != nil {
		t.Fatal(err)
	}
	buf[0] ^= 0x20
	if _, err := f.WriteAt(buf, at); err != nil {
		t.Fatal(err)
	}
	f.Close()

	b = startBroker(t, dir, nil)
	defer b.Close()
	c = dialRaw(t, b.Addr())
	// The records before it, and not it.
	r = c.call(pullReq("g", topic, 0, 0, 32, 0, "*"))
	recs = decodeRecords(t, r.Body)
	if r.Code != protocol.Success || len(recs) != victim || ext64(t, r, "nextBeginOffset") != victim {
		t.Fatalf("pull from 0: %s, %d records; want %d records, next %d", r, len(recs), victim, victim)
	}
	verifyBody(t, r.Body)
	// The pull at it: moved past it, named. A suspending pull gets the
	// same answer at once (it is not held).
	for _, suspend := range []time.Duration{0, 20 * time.Second} {
		r = c.call(pullReq("g", topic, 0, victim, 32, suspend, "*"))
		if r.Code != protocol.PullOffsetMoved || ext64(t, r, "nextBeginOffset") != victim+1 || len(r.Body) != 0 {
			t.Fatalf("pull at the corrupt record (suspend %v): %s; want PULL_OFFSET_MOVED to %d", suspend, r, victim+1)
		}
		for _, want := range []string{"topic " + topic, "queue 0", fmt.Sprintf("queue offset %d", victim), fmt.Sprintf("physical offset %d", phys)} {
			if !strings.Contains(r.Remark, want) {
				t.Fatalf("remark %q lacks %q", r.Remark, want)
			}
		}
	}
	// The consumer moves on.
	r = c.call(pullReq("g", topic, 0, victim+1, 32, 0, "*"))
	recs = decodeRecords(t, r.Body)
	if r.Code != protocol.Success || len(recs) != n-victim-1 || recs[0].QueueOffset != victim+1 {
		t.Fatalf("pull after it: %s, %d records", r, len(recs))
	}
	verifyBody(t, r.Body)

	metrics := scrape(t, b)
	for _, want := range []string{"samsa_store_corrupt_records_total 1", "samsa_store_quarantined_records 1",
		"samsa_broker_pull_corrupt_skips_total 2"} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	st := textStats(t, b)
	if st["store_corrupt_records"] != "1" || st["store_quarantined"] != "1" || st["pull_corrupt_skips"] != "2" {
		t.Errorf("stats: corrupt %q quarantined %q skips %q", st["store_corrupt_records"], st["store_quarantined"], st["pull_corrupt_skips"])
	}
}

// verifyBody checks every record of a pull body.
func verifyBody(t *testing.T, body []byte) {
	t.Helper()
	for len(body) > 0 {
		size, _, err := record.Header(body)
		if err != nil || int(size) > len(body) {
			t.Fatalf("bad record in pull body: %v", err)
		}
		if err := record.Verify(body[:size], record.NoPhys); err != nil {
			t.Fatalf("served a bad record: %v", err)
		}
		body = body[size:]
	}
}

func scrape(t *testing.T, b *Broker) string {
	t.Helper()
	resp, err := http.Get("http://" + b.AdminAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return string(body)
}

// textStats asks the text protocol for its stats.
func textStats(t *testing.T, b *Broker) map[string]string {
	t.Helper()
	nc, err := net.Dial("tcp", b.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(nc, "stats\r\n")
	br := bufio.NewReader(nc)
	out := make(map[string]string)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("read stats: %v", err)
		}
		line = strings.TrimSuffix(line, "\r\n")
		if line == "END" {
			return out
		}
		if f := strings.SplitN(line, " ", 3); len(f) == 3 {
			out[f[1]] = f[2]
		}
	}
}
