package broker

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/samsamq/samsa/broker/txn"
)

// mqClient is a MetaQ text client written from the protocol's
// description: it sends lines and reads "result"/"value" answers.
type mqClient struct {
	t  *testing.T
	nc net.Conn
	br *bufio.Reader
}

func dialMQ(t *testing.T, addr string) *mqClient {
	t.Helper()
	nc := dialText(t, addr)
	_ = nc.SetDeadline(time.Now().Add(60 * time.Second))
	return &mqClient{t: t, nc: nc, br: bufio.NewReader(nc)}
}

func (m *mqClient) send(s string) {
	m.t.Helper()
	if _, err := io.WriteString(m.nc, s); err != nil {
		m.t.Fatal(err)
	}
}

// putLine is a put's request with MetaQ's checksum.
func putLine(topic string, partition int, flag int, value []byte, opaque int) string {
	return fmt.Sprintf("put %s %d %d %d %d %d\r\n%s", topic, partition, len(value), flag, crc32.ChecksumIEEE(value)&0x7FFFFFFF, opaque, value)
}

// mqAnswer is one answer: kind "result" or "value", code (results),
// opaque and body; or a bare line (line set) for the other forms.
type mqAnswer struct {
	kind   string
	code   int
	opaque int
	body   []byte
	line   string
}

func (m *mqClient) read() mqAnswer {
	m.t.Helper()
	line, err := m.br.ReadString('\n')
	if err != nil {
		m.t.Fatalf("read answer: %v (after %q)", err, line)
	}
	f := strings.Fields(line)
	var a mqAnswer
	var n int
	switch {
	case len(f) == 4 && f[0] == "result":
		a.kind = "result"
		a.code, _ = strconv.Atoi(f[1])
		n, _ = strconv.Atoi(f[2])
		a.opaque, _ = strconv.Atoi(f[3])
	case len(f) == 3 && f[0] == "value":
		a.kind = "value"
		n, _ = strconv.Atoi(f[1])
		a.opaque, _ = strconv.Atoi(f[2])
	default:
		return mqAnswer{line: line}
	}
	a.body = make([]byte, n)
	if _, err := io.ReadFull(m.br, a.body); err != nil {
		m.t.Fatalf("read answer body: %v", err)
	}
	return a
}

func (m *mqClient) put(topic string, partition int, value []byte) (id, pos int64) {
	m.t.Helper()
	m.send(putLine(topic, partition, 0, value, 1))
	a := m.read()
	var p int
	if a.code != 200 || a.opaque != 1 {
		m.t.Fatalf("put: %+v %q", a, a.body)
	}
	if _, err := fmt.Sscanf(string(a.body), "%d %d %d", &id, &p, &pos); err != nil || p != partition {
		m.t.Fatalf("put answer %q", a.body)
	}
	return id, pos
}

// get asks until the answer is not 404 (the dispatcher indexes a put
// shortly after it is acknowledged).
func (m *mqClient) get(topic string, partition int, offset int64, maxSize int) mqAnswer {
	m.t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(2 * time.Millisecond) {
		m.send(fmt.Sprintf("get %s grp %d %d %d 9\r\n", topic, partition, offset, maxSize))
		a := m.read()
		if a.opaque != 9 {
			m.t.Fatalf("get answer %+v", a)
		}
		if a.kind == "value" || a.code != 404 || time.Now().After(deadline) {
			return a
		}
	}
}

// waitDispatched waits until queue q of topic holds n messages readable
// (the dispatcher indexes a put shortly after it is acknowledged).
func waitDispatched(t *testing.T, b *Broker, topic string, q int32, n int64) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); b.store.MaxQueueOffset(topic, q) < n; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s:%d: %d messages dispatched, want %d", topic, q, b.store.MaxQueueOffset(topic, q), n)
		}
	}
}

// specMessage is one message of a set, decoded by MetaQ's layout:
// length 4, checksum 4, id 8, flag 4, data.
type specMessage struct {
	id   int64
	flag int32
	data []byte
}

func decodeSpecSet(t *testing.T, set []byte) (msgs []specMessage, used int) {
	t.Helper()
	for len(set)-used >= 20 {
		b := set[used:]
		n := int(binary.BigEndian.Uint32(b))
		if len(b) < 20+n {
			break
		}
		data := b[20 : 20+n]
		if got, want := binary.BigEndian.Uint32(b[4:]), crc32.ChecksumIEEE(data)&0x7FFFFFFF; got != want {
			t.Fatalf("message at %d: checksum %d, want %d", used, got, want)
		}
		msgs = append(msgs, specMessage{int64(binary.BigEndian.Uint64(b[8:])), int32(binary.BigEndian.Uint32(b[16:])), data})
		used += 20 + n
	}
	return msgs, used
}

func TestMetaQPutGet(t *testing.T) {
	b := startBroker(t, "", nil)
	defer b.Close()
	m := dialMQ(t, b.Addr())
	values := [][]byte{[]byte("hello"), {0, 1, 2, '\r', '\n', 0xff}, bytes.Repeat([]byte("x"), 3000), {}}
	var ids []int64
	want := int64(0)
	for _, v := range values {
		id, pos := m.put("mqt", 2, v)
		if pos != want {
			t.Fatalf("put at %d, want %d", pos, want)
		}
		ids = append(ids, id)
		want += int64(20 + len(v))
	}
	// An attribute: flag bit 0, the value starts with its length.
	attrValue := append(binary.BigEndian.AppendUint32(nil, 3), "k=vpayload"...)
	m.send(putLine("mqt", 2, 5, attrValue, 2))
	if a := m.read(); a.code != 200 || a.opaque != 2 {
		t.Fatalf("put with attribute: %+v %q", a, a.body)
	}
	values = append(values, attrValue)

	waitDispatched(t, b, "mqt", 2, int64(len(values)))
	a := m.get("mqt", 2, 0, 1<<20)
	if a.kind != "value" {
		t.Fatalf("get: %+v %q", a, a.body)
	}
	msgs, used := decodeSpecSet(t, a.body)
	if used != len(a.body) || len(msgs) != len(values) {
		t.Fatalf("get: %d messages in %d of %d bytes", len(msgs), used, len(a.body))
	}
	for i, msg := range msgs {
		if !bytes.Equal(msg.data, values[i]) {
			t.Fatalf("message %d: %q, want %q", i, msg.data, values[i])
		}
		if i < len(ids) && (msg.id != ids[i] || msg.flag != 0) {
			t.Fatalf("message %d: id %d flag %d, want id %d", i, msg.id, msg.flag, ids[i])
		}
	}
	if msgs[4].flag != 5 {
		t.Fatalf("attribute message flag %d", msgs[4].flag)
	}
	// At the end: not found; past it: moved to the end; inside a
	// message: moved to its start.
	end := int64(used)
	m.send(fmt.Sprintf("get mqt grp 2 %d 100 3\r\n", end))
	if a := m.read(); a.code != 404 || a.opaque != 3 {
		t.Fatalf("get at the end: %+v %q", a, a.body)
	}
	m.send(fmt.Sprintf("get mqt grp 2 %d 100 4\r\n", end+1000))
	if a := m.read(); a.code != 301 || string(a.body) != strconv.FormatInt(end, 10) {
		t.Fatalf("get past the end: %+v %q", a, a.body)
	}
	m.send("get mqt grp 2 30 100 5\r\n")
	if a := m.read(); a.code != 301 || string(a.body) != "25" {
		t.Fatalf("get inside a message: %+v %q", a, a.body)
	}
	m.send("offset mqt grp 2 30 6\r\n")
	if a := m.read(); a.code != 200 || string(a.body) != "25" || a.opaque != 6 {
		t.Fatalf("offset: %+v %q", a, a.body)
	}
	m.send("get nosuchtopic grp 0 0 100 7\r\n")
	if a := m.read(); a.code != 404 || !strings.Contains(string(a.body), "nosuchtopic") {
		t.Fatalf("get of a missing topic: %+v %q", a, a.body)
	}
	// Partial sets: a consumer with a maxSize of 40 walks every message
	// by adding the bytes it decoded, growing maxSize when one message
	// does not fit, as MetaQ's consumer does.
	var got [][]byte
	for off, max := int64(0), 40; off < end; {
		a := m.get("mqt", 2, off, max)
		if a.kind != "value" || len(a.body) > max {
			t.Fatalf("get at %d max %d: %+v", off, max, a)
		}
		msgs, used := decodeSpecSet(t, a.body)
		if used == 0 {
			max *= 2
			continue
		}
		for _, msg := range msgs {
			got = append(got, msg.data)
		}
		off += int64(used)
	}
	if len(got) != len(values) {
		t.Fatalf("partial walk: %d messages, want %d", len(got), len(values))
	}
	for i := range got {
		if !bytes.Equal(got[i], values[i]) {
			t.Fatalf("partial walk: message %d differs", i)
		}
	}
	// version and stats with an opaque answer "result"; without, as before.
	m.send("version 11\r\nversion\r\nstats topics 12\r\n")
	if a := m.read(); a.code != 200 || a.opaque != 11 || string(a.body) != DefaultVersion {
		t.Fatalf("version 11: %+v %q", a, a.body)
	}
	if a := m.read(); a.line != "VERSION "+DefaultVersion+"\r\n" {
		t.Fatalf("version: %q", a.line)
	}
	if a := m.read(); a.code != 200 || a.opaque != 12 || !strings.Contains(string(a.body), "STAT topic:mqt:put 5\r\n") {
		t.Fatalf("stats topics 12: %+v %q", a, a.body)
	}
}

// TestMetaQBadInput: refused lines get clear answers by opaque, the
// connection goes on, and nothing acknowledged is lost.
func TestMetaQBadInput(t *testing.T) {
	b := startBroker(t, "", nil)
	defer b.Close()
	m := dialMQ(t, b.Addr())
	m.send(putLine("mqbad", 0, 0, []byte("first"), 1) +
		"put mqbad 0 5 0 12345 2\r\nwrong" + // bad checksum
		"put mqbad zz 5 0 3\r\nvalue" + // bad partition, value skipped
		"put mqbad 0 5 0 1 x\r\nvalue" + // bad opaque, value skipped
		"get mqbad grp 0 0 0 4\r\n" + // maxSize 0
		"bogus\r\n" +
		"put mqbad 99 5 0 5\r\nvalue" + // no such partition
		"transaction TX:1 s1 PREPARE 6\r\n" + // XA's verb on a local transaction
		putLine("mqbad", 0, 0, []byte("second"), 7))
	answers := map[int]mqAnswer{}
	var lines []string
	for range 9 {
		a := m.read()
		if a.line != "" {
			lines = append(lines, a.line)
			continue
		}
		answers[a.opaque] = a
	}
	check := func(opaque, code int, text string) {
		t.Helper()
		a, ok := answers[opaque]
		if !ok || a.code != code || !strings.Contains(string(a.body), text) {
			t.Errorf("opaque %d: %+v %q, want %d with %q", opaque, a, a.body, code, text)
		}
	}
	check(1, 200, " 0 0")
	check(2, 500, "Checksum failure")
	check(3, 400, "partition \"zz\"")
	check(4, 400, "invalid max size")
	check(5, 403, "partition 99")
	check(6, 400, "PREPARE is not supported for a local transaction")
	check(7, 200, " 0 25")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "CLIENT_ERROR opaque \"x\"") && !strings.HasPrefix(lines[1], "CLIENT_ERROR opaque \"x\"") {
		t.Errorf("bare answers %q", lines)
	}
	waitDispatched(t, b, "mqbad", 0, 2)
	a := m.get("mqbad", 0, 0, 1000)
	msgs, _ := decodeSpecSet(t, a.body)
	if len(msgs) != 2 || string(msgs[0].data) != "first" || string(msgs[1].data) != "second" {
		t.Fatalf("stored: %+v", msgs)
	}
	// A put whose value length is unreadable ends the connection, after
	// the answers in flight.
	m.send(putLine("mqbad", 0, 0, []byte("third"), 8) + "put mqbad 0 nope 0 9\r\nxx")
	var put8, refused bool // in either order: the put may still be in flight
	for range 2 {
		switch a := m.read(); {
		case a.code == 200 && a.opaque == 8:
			put8 = true
		case strings.HasPrefix(a.line, "CLIENT_ERROR value-length \"nope\""):
			refused = true
		default:
			t.Fatalf("answer %+v", a)
		}
	}
	if !put8 || !refused {
		t.Fatalf("put answered %v, bad line refused %v", put8, refused)
	}
	if _, err := m.br.ReadByte(); err != io.EOF {
		t.Fatalf("after an unreadable put: %v, want EOF", err)
	}
}

// TestMetaQPipelined: 64 puts and then 64 gets in flight on one
// connection, answered by opaque.
func TestMetaQPipelined(t *testing.T) {
	b := startBroker(t, "", nil)
	defer b.Close()
	m := dialMQ(t, b.Addr())
	const n = 64
	var batch strings.Builder
	for i := range n {
		batch.WriteString(putLine("mqpipe", 1, 0, []byte(fmt.Sprintf("m-%03d", i)), 1000+i))
	}
	go func() { _, _ = io.WriteString(m.nc, batch.String()) }()
	positions := map[int64]bool{}
	seen := map[int]bool{}
	for range n {
		a := m.read()
		if a.code != 200 || a.opaque < 1000 || a.opaque >= 1000+n || seen[a.opaque] {
			t.Fatalf("put answer %+v %q", a, a.body)
		}
		seen[a.opaque] = true
		var id, pos int64
		var p int
		if _, err := fmt.Sscanf(string(a.body), "%d %d %d", &id, &p, &pos); err != nil || pos%25 != 0 || positions[pos] {
			t.Fatalf("put answer %q", a.body)
		}
		positions[pos] = true
	}
	waitDispatched(t, b, "mqpipe", 1, n)
	batch.Reset()
	for i := range n {
		fmt.Fprintf(&batch, "get mqpipe grp 1 %d 25 %d\r\n", 25*i, 2000+i)
	}
	go func() { _, _ = io.WriteString(m.nc, batch.String()) }()
	payloads := map[string]bool{}
	for range n {
		a := m.read()
		msgs, used := decodeSpecSet(t, a.body)
		if a.kind != "value" || used != 25 || len(msgs) != 1 || a.opaque < 2000 || a.opaque >= 2000+n {
			t.Fatalf("get answer %+v", a)
		}
		payloads[string(msgs[0].data)] = true
	}
	if len(payloads) != n {
		t.Fatalf("%d distinct messages read, want %d", len(payloads), n)
	}
}

// TestMetaQACL: with ACL on, put, get and offset need an admin account's
// auth first; version and quit do not.
func TestMetaQACL(t *testing.T) {
	dev, _ := startACLDev(t)
	m := dialMQ(t, dev.BrokerAddr())
	m.send("version 1\r\n" + putLine("mqacl", 0, 0, []byte("refused"), 2))
	if a := m.read(); a.code != 200 || a.opaque != 1 {
		t.Fatalf("version without auth: %+v", a)
	}
	if a := m.read(); !strings.HasPrefix(a.line, "CLIENT_ERROR access denied") {
		t.Fatalf("put without auth: %+v", a)
	}
	if _, err := m.br.ReadByte(); err != io.EOF {
		t.Fatalf("after a refusal: %v, want EOF", err)
	}
	for _, cmd := range []string{"get mqacl grp 0 0 100 3\r\n", "offset mqacl grp 0 0 4\r\n", "auth " + aclUserKey + " " + aclUserSecret + "\r\n"} {
		m := dialMQ(t, dev.BrokerAddr())
		m.send(cmd)
		if a := m.read(); !strings.HasPrefix(a.line, "CLIENT_ERROR access denied") {
			t.Fatalf("%q without admin auth: %+v", cmd, a)
		}
	}
	m = dialMQ(t, dev.BrokerAddr())
	m.send("auth " + aclAdminKey + " " + aclAdminSecret + "\r\n")
	if a := m.read(); a.line != "OK\r\n" {
		t.Fatalf("auth: %+v", a)
	}
	if _, pos := m.put("mqacl", 0, []byte("accepted")); pos != 0 {
		t.Fatalf("put after auth at %d", pos)
	}
	a := m.get("mqacl", 0, 0, 100)
	if msgs, _ := decodeSpecSet(t, a.body); len(msgs) != 1 || string(msgs[0].data) != "accepted" {
		t.Fatalf("get after auth: %+v", a)
	}
}

// TestMetaQTransaction: a transaction's puts are invisible until
// COMMIT_ONE_PHASE, then readable in order; a rolled-back one never is.
func TestMetaQTransaction(t *testing.T) {
	b := startBroker(t, "", nil)
	defer b.Close()
	m := dialMQ(t, b.Addr())
	txPut := func(key string, value string, opaque int) string {
		return fmt.Sprintf("put mqtx 0 %d 0 %s %d\r\n%s", len(value), key, opaque, value)
	}
	// Pipelined: begin, two puts, a rollback of another transaction,
	// then the commit, in one write.
	m.send("transaction TX:a s1 BEGIN 30 1\r\n" + txPut("TX:a", "one", 2) + txPut("TX:a", "two", 3) +
		"transaction TX:b s1 BEGIN 4\r\n" + txPut("TX:b", "rolled back", 5) + "transaction TX:b s1 ROLLBACK 6\r\n" +
		txPut("TX:none", "no such transaction", 7))
	answers := map[int]mqAnswer{}
	for range 7 {
		a := m.read()
		answers[a.opaque] = a
	}
	for o := 1; o <= 6; o++ {
		if a := answers[o]; a.code != 200 {
			t.Fatalf("opaque %d: %+v %q", o, a, a.body)
		}
	}
	if a := answers[7]; a.code != 400 || !strings.Contains(string(a.body), "not begun") {
		t.Fatalf("put in an unknown transaction: %+v %q", a, a.body)
	}
	if a := answers[2]; !strings.HasSuffix(string(a.body), " 0 -1") {
		t.Fatalf("put in a transaction: %q, want offset -1", a.body)
	}
	m.send("get mqtx grp 0 0 1000 8\r\n")
	if a := m.read(); a.code != 404 && a.code != 301 {
		t.Fatalf("get before commit: %+v %q", a, a.body)
	}
	m.send("transaction TX:a s1 COMMIT_ONE_PHASE 9\r\n")
	if a := m.read(); a.code != 200 || a.opaque != 9 {
		t.Fatalf("commit: %+v %q", a, a.body)
	}
	var got []string
	for deadline := time.Now().Add(20 * time.Second); len(got) < 2 && time.Now().Before(deadline); {
		a := m.get("mqtx", 0, 0, 1000)
		msgs, _ := decodeSpecSet(t, a.body)
		got = got[:0]
		for _, msg := range msgs {
			got = append(got, string(msg.data))
		}
	}
	if strings.Join(got, ",") != "one,two" {
		t.Fatalf("after commit: %q", got)
	}
	m.send("transaction TX:a s1 COMMIT_ONE_PHASE 10\r\n")
	if a := m.read(); a.code != 400 {
		t.Fatalf("second commit: %+v %q", a, a.body)
	}
}

// TestMetaQPutCostsWhatArrived: 64 connections each announce a put of
// maxMessageSize and send 1000 bytes of its value; the broker's buffers
// follow what arrived, so the lot allocates far under the 256 MiB
// announced.
func TestMetaQPutCostsWhatArrived(t *testing.T) {
	b := startBroker(t, "", nil)
	defer b.Close()
	const conns, sent = 64, 1000
	line := fmt.Sprintf("put mqbig 0 %d 0 1\r\n", b.cfg.MaxMessageSize)
	msg := append([]byte(line), bytes.Repeat([]byte("v"), sent)...)
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	ncs := make([]net.Conn, conns)
	for i := range ncs {
		ncs[i] = dialTCP(t, b.Addr())
		if _, err := ncs[i].Write(msg); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, func() bool { return b.stats.bytesRead.Load() >= conns*int64(len(msg)) }, "the broker to read every byte sent")
	runtime.ReadMemStats(&after)
	for _, nc := range ncs {
		nc.Close()
	}
	if grown := after.TotalAlloc - before.TotalAlloc; grown > 64<<20 {
		t.Fatalf("%d connections announcing %d-byte puts and sending %d bytes each cost %d MiB of allocation", conns, b.cfg.MaxMessageSize, sent, grown>>20)
	}
}

// TestMetaQStalledPutClosed: a put whose value stops arriving closes its
// connection after frameReadTimeoutMillis, counted, and stores nothing;
// an idle text connection closes after serverChannelMaxIdleTimeSeconds.
func TestMetaQStalledPutClosed(t *testing.T) {
	b := startBroker(t, "", func(c *Config) {
		c.FrameReadTimeout = 200 * time.Millisecond
		c.ServerChannelMaxIdle = time.Second
	})
	defer b.Close()
	nc := dialTCP(t, b.Addr())
	if _, err := io.WriteString(nc, "put mqstall 0 100 0 1\r\nonly part"); err != nil {
		t.Fatal(err)
	}
	waitServerClose(t, nc, "a stalled put")
	waitFor(t, func() bool { return b.stats.frameTimeouts.Load() == 1 }, "frame_timeouts 1")
	if n := b.store.MaxQueueOffset("mqstall", 0); n != 0 {
		t.Fatalf("a stalled put stored %d messages", n)
	}
	idle := dialTCP(t, b.Addr())
	if _, err := io.WriteString(idle, "version 1\r\n"); err != nil {
		t.Fatal(err)
	}
	waitServerClose(t, idle, "an idle text connection")
	waitFor(t, func() bool { return b.stats.idleCloses.Load() >= 1 }, "idle_closes 1")
}

// TestMetaQTransactionLeftOpen: a connection that ends with a
// transaction open rolls it back (an op record settles its half) and its
// message never reaches the queue.
func TestMetaQTransactionLeftOpen(t *testing.T) {
	b := startBroker(t, "", nil)
	defer b.Close()
	m := dialMQ(t, b.Addr())
	ops := b.store.MaxQueueOffset(txn.OpHalfTopic, 0)
	m.send("transaction TX:open s1 BEGIN 1\r\nput mqopen 0 4 0 TX:open 2\r\nlostquit\r\n")
	for range 2 {
		if a := m.read(); a.code != 200 {
			t.Fatalf("answer %+v %q", a, a.body)
		}
	}
	if _, err := m.br.ReadByte(); err != io.EOF {
		t.Fatalf("after quit: %v", err)
	}
	waitDispatched(t, b, txn.OpHalfTopic, 0, ops+1)
	if n := b.store.MaxQueueOffset("mqopen", 0); n != 0 {
		t.Fatalf("a rolled-back transaction's message reached the queue (%d messages)", n)
	}
}
