package broker

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestMetaQXA: an XA branch over the text protocol: BEGIN, puts, END,
// PREPARE (body "0", XA_OK); the puts stay invisible, and RECOVER lists
// the branch, across a restart of the broker; COMMIT_TWO_PHASE makes
// them readable once; a second commit answers XAER_NOTA; a malformed key
// is a bad request; a one-phase commit needs no END.
func TestMetaQXA(t *testing.T) {
	dir := t.TempDir()
	b := startBroker(t, dir, nil)
	m := dialMQ(t, b.Addr())
	key := "XID:7:676c6f62616c:6272:rm-1"
	put := func(key, value string, opaque int) string {
		return fmt.Sprintf("put mqxa 0 %d 0 %s %d\r\n%s", len(value), key, opaque, value)
	}
	do := func(line string, code int, text string) mqAnswer {
		t.Helper()
		m.send(line)
		a := m.read()
		if a.code != code || !strings.Contains(string(a.body), text) {
			t.Fatalf("%q: %+v %q, want %d with %q", line, a, a.body, code, text)
		}
		return a
	}
	do("transaction "+key+" s1 BEGIN 1\r\n", 200, "")
	do(put(key, "one", 2), 200, " 0 -1")
	do(put(key, "two", 3), 200, " 0 -1")
	do("transaction "+key+" s1 END 4\r\n", 200, "")
	if a := do("transaction "+key+" s1 PREPARE 5\r\n", 200, ""); string(a.body) != "0" {
		t.Fatalf("prepare answered %q, want XA_OK (0)", a.body)
	}
	do("transaction XID:7:zz:00:rm-1 s1 BEGIN 6\r\n", 400, "XA transaction key")
	do("transaction XID:7:00:00:rm-1 s1 FORGET 7\r\n", 500, "XAER_NOTA")
	do("transaction "+key+" s1 FORGET 8\r\n", 500, "XAER_PROTO")
	_ = m.nc.Close()
	b.Close()

	b = startBroker(t, dir, nil)
	defer b.Close()
	m = dialMQ(t, b.Addr())
	if a := do("transaction XID:0:00:00:rm-2 s2 RECOVER 9\r\n", 200, ""); string(a.body) != "XID:7:676c6f62616c:6272:rm-2" {
		t.Fatalf("recover after a restart: %q", a.body)
	}
	if a := m.get("mqxa", 0, 0, 1000); a.code == 200 {
		t.Fatalf("a prepared branch's puts are readable: %q", a.body)
	}
	do("transaction "+key+" s2 COMMIT_TWO_PHASE 10\r\n", 200, "")
	do("transaction "+key+" s2 COMMIT_TWO_PHASE 11\r\n", 500, "XAER_NOTA")
	// One phase, no END: the branch is ended by the commit.
	k2 := "XID:7:6f6e65:6272:rm-1"
	do("transaction "+k2+" s2 BEGIN 12\r\n", 200, "")
	do(put(k2, "three", 13), 200, " 0 -1")
	do("transaction "+k2+" s2 COMMIT_ONE_PHASE 14\r\n", 200, "")
	var got []string
	for deadline := time.Now().Add(20 * time.Second); len(got) < 3 && time.Now().Before(deadline); {
		a := m.get("mqxa", 0, 0, 1000)
		msgs, _ := decodeSpecSet(t, a.body)
		got = got[:0]
		for _, msg := range msgs {
			got = append(got, string(msg.data))
		}
	}
	if strings.Join(got, ",") != "one,two,three" {
		t.Fatalf("after the commits: %q", got)
	}
	if a := do("transaction XID:0:00:00:rm-2 s2 RECOVER 15\r\n", 200, ""); len(a.body) != 0 {
		t.Fatalf("recover after the commits: %q", a.body)
	}
}
