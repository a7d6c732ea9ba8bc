package metaq

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/samsamq/samsa/protocol/metaq"
	"github.com/samsamq/samsa/storage"
	"github.com/samsamq/samsa/storage/vfs"
)

type rig struct {
	t   *testing.T
	fs  *vfs.MemFS
	st  *storage.Store
	srv *Server
	// hold, when set, is called before each append with its batch size.
	hold func(n int)
}

func newRig(t *testing.T) *rig {
	r := &rig{t: t, fs: vfs.NewMem()}
	r.open()
	return r
}

func (r *rig) open() {
	o := storage.Options{Dir: "/store", FS: r.fs, SegmentSize: 1 << 20, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	o.Flush.Policy = storage.FlushSync
	o.Retention.MaxAge, o.Retention.DiskRatio = -1, -1
	st, err := storage.Open(o)
	if err != nil {
		r.t.Fatal(err)
	}
	r.st = st
	r.t.Cleanup(func() { _ = st.Close() })
	r.srv = New(Deps{Store: st,
		Append: func(ms []*storage.Message) ([]storage.AppendResult, *Refusal) {
			if r.hold != nil {
				r.hold(len(ms))
			}
			res, err := st.AppendBatch(context.Background(), ms)
			if err != nil {
				return nil, &Refusal{metaq.InternalServerError, err.Error()}
			}
			return res, nil
		},
		PutQueue: func(topic string, p int32) (int32, *Refusal) {
			if p >= 4 {
				return 0, &Refusal{metaq.Forbidden, "no such partition"}
			}
			return max(p, 0), nil
		},
		Readable: func(topic string, p int32) *Refusal {
			if topic == "missing" {
				return &Refusal{metaq.NotFound, "The topic `missing` is not exists"}
			}
			return nil
		},
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
}

func (r *rig) reopen() {
	if err := r.st.Close(); err != nil {
		r.t.Fatal(err)
	}
	r.open()
}

// result parses a "result" answer.
func result(t *testing.T, a []byte) (code int, msg string, opaque int32) {
	t.Helper()
	line, rest, ok := bytes.Cut(a, []byte("\r\n"))
	f := strings.Fields(string(line))
	if !ok || len(f) != 4 || f[0] != "result" {
		t.Fatalf("not a result: %q", a)
	}
	code, _ = strconv.Atoi(f[1])
	n, _ := strconv.Atoi(f[2])
	o, _ := strconv.Atoi(f[3])
	if n != len(rest) {
		t.Fatalf("result length %d, message %q", n, rest)
	}
	return code, string(rest), int32(o)
}

func (r *rig) put(topic string, partition int32, flag int32, value []byte) (id, pos int64) {
	r.t.Helper()
	c := &metaq.Command{Kind: metaq.Put, Topic: topic, Partition: partition, Flag: flag, Checksum: metaq.Checksum(value), Opaque: 1}
	code, msg, _ := result(r.t, r.srv.Put(nil, c, value, netip.MustParseAddrPort("127.0.0.1:1")))
	if code != metaq.Success {
		r.t.Fatalf("put: %d %s", code, msg)
	}
	var p int32
	if _, err := fmt.Sscanf(msg, "%d %d %d", &id, &p, &pos); err != nil || p != max(partition, 0) {
		r.t.Fatalf("put answer %q", msg)
	}
	return id, pos
}

// get asks until the answer is not "not found" (the store's dispatcher
// indexes a put shortly after it is acknowledged).
func (r *rig) get(topic string, partition int32, offset int64, maxSize int32) (head, set []byte) {
	r.t.Helper()
	c := &metaq.Command{Kind: metaq.Get, Topic: topic, Group: "g", Partition: partition, Offset: offset, MaxSize: maxSize, Opaque: 2}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		head, set = r.srv.Get(nil, c)
		if set != nil || !bytes.HasPrefix(head, []byte("result 404")) || time.Now().After(deadline) {
			return head, set
		}
	}
}

// rawMessage is MetaQ's encoding of a put's value, from the layout:
// length, checksum, id, flag, the value as sent.
func rawMessage(dst []byte, id int64, flag int32, value []byte) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(value)))
	dst = binary.BigEndian.AppendUint32(dst, uint32(crc32.ChecksumIEEE(value)&0x7FFFFFFF))
	dst = binary.BigEndian.AppendUint64(dst, uint64(id))
	dst = binary.BigEndian.AppendUint32(dst, uint32(flag))
	return append(dst, value...)
}

// waitDispatched waits until queue q of topic holds n messages readable
// (the dispatcher indexes a put shortly after it is acknowledged).
func (r *rig) waitDispatched(topic string, q int32, n int64) {
	r.t.Helper()
	for deadline := time.Now().Add(10 * time.Second); r.st.MaxQueueOffset(topic, q) < n; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			r.t.Fatalf("%s:%d: %d messages dispatched, want %d", topic, q, r.st.MaxQueueOffset(topic, q), n)
		}
	}
}

func attrValue(attr, payload string) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(len(attr)))
	return append(append(b, attr...), payload...)
}

func TestPutGetRoundTrip(t *testing.T) {
	r := newRig(t)
	values := [][]byte{[]byte("hello"), attrValue("k=v", "with attribute"), {}, bytes.Repeat([]byte{0, 1, 2, 0xff}, 300)}
	flags := []int32{0, 1 | 8, 0, 16}
	var want []byte
	var pos int64
	for i, v := range values {
		id, p := r.put("t", 1, flags[i], v)
		if p != pos {
			t.Fatalf("put %d at position %d, want %d", i, p, pos)
		}
		want = rawMessage(want, id, flags[i], v)
		pos += int64(metaq.HeaderLen + len(v))
	}
	r.waitDispatched("t", 1, 4)
	head, set := r.get("t", 1, 0, 1<<20)
	if string(head) != fmt.Sprintf("value %d 2\r\n", len(set)) {
		t.Fatalf("head %q", head)
	}
	if !bytes.Equal(set, want) {
		t.Fatalf("set\n%x\nwant\n%x", set, want)
	}
	msgs, used, err := metaq.DecodeSet(set)
	if err != nil || used != len(set) || len(msgs) != 4 {
		t.Fatalf("decode: %d msgs, %d of %d bytes, %v", len(msgs), used, len(set), err)
	}
	if m := msgs[1]; !m.HasAttr || string(m.Attr) != "k=v" || string(m.Payload) != "with attribute" || m.Flag != 9 {
		t.Fatalf("attribute message %+v", m)
	}
	// Every message start is a valid position; the end is "not found".
	off := int64(0)
	for _, m := range msgs[:3] {
		_, s := r.get("t", 1, off, 1<<20)
		if mm, _, err := metaq.DecodeMessage(s); err != nil || mm.ID != m.ID {
			t.Fatalf("get at %d: %+v %v", off, mm, err)
		}
		off += int64(metaq.EncodedLen(m.HasAttr, len(m.Attr), len(m.Payload)))
	}
	head, _ = r.srv.Get(nil, &metaq.Command{Kind: metaq.Get, Topic: "t", Partition: 1, Offset: pos, MaxSize: 100, Opaque: 3})
	if code, msg, o := result(t, head); code != metaq.NotFound || o != 3 || !strings.Contains(msg, "Could not find message at position") {
		t.Fatalf("get at the end: %d %q", code, msg)
	}
}

func TestPartialGet(t *testing.T) {
	r := newRig(t)
	for i := range 10 {
		r.put("t", 0, 0, []byte(fmt.Sprintf("message-%02d", i))) // 20+10 bytes each
	}
	// A consumer with maxSize 70 gets two whole messages and a cut third,
	// and goes on from the bytes it used: it sees all ten, in order.
	var got []string
	off := int64(0)
	for len(got) < 10 {
		_, set := r.get("t", 0, off, 70)
		if len(set) == 0 || len(set) > 70 {
			t.Fatalf("get at %d: %d bytes", off, len(set))
		}
		msgs, used, err := metaq.DecodeSet(set)
		if err != nil || len(msgs) == 0 {
			t.Fatalf("decode at %d: %v", off, err)
		}
		for _, m := range msgs {
			got = append(got, string(m.Payload))
		}
		off += int64(used)
	}
	for i, g := range got {
		if g != fmt.Sprintf("message-%02d", i) {
			t.Fatalf("message %d = %q", i, g)
		}
	}
	// A maxSize smaller than one message: its first bytes only (MetaQ's
	// consumer then grows maxSize).
	_, set := r.get("t", 0, 0, 7)
	if len(set) != 7 {
		t.Fatalf("maxSize 7: %d bytes", len(set))
	}
}

func TestMovedAndOffset(t *testing.T) {
	r := newRig(t)
	r.put("t", 0, 0, []byte("aaaa")) // [0, 24)
	r.put("t", 0, 0, []byte("bb"))   // [24, 46)
	r.waitDispatched("t", 0, 2)
	for _, tc := range []struct {
		offset int64
		code   int
		msg    string
	}{
		{1000, metaq.Moved, "46"},
		{47, metaq.Moved, "46"},
		{30, metaq.Moved, "24"},
		{1, metaq.Moved, "0"},
	} {
		head, _ := r.get("t", 0, tc.offset, 100)
		if code, msg, _ := result(t, head); code != tc.code || msg != tc.msg {
			t.Errorf("get at %d: %d %q, want %d %q", tc.offset, code, msg, tc.code, tc.msg)
		}
	}
	for _, tc := range []struct{ offset, want int64 }{{0, 0}, {24, 24}, {30, 24}, {46, 46}, {9999, 46}} {
		a := r.srv.Offset(nil, &metaq.Command{Kind: metaq.Offset, Topic: "t", Partition: 0, Offset: tc.offset, Opaque: 5})
		if code, msg, o := result(t, a); code != metaq.Success || msg != strconv.FormatInt(tc.want, 10) || o != 5 {
			t.Errorf("offset %d: %d %q", tc.offset, code, msg)
		}
	}
	head, _ := r.srv.Get(nil, &metaq.Command{Kind: metaq.Get, Topic: "missing", Partition: 0, MaxSize: 10, Opaque: 6})
	if code, _, _ := result(t, head); code != metaq.NotFound {
		t.Errorf("missing topic: %d", code)
	}
}

func TestPutRefusals(t *testing.T) {
	r := newRig(t)
	born := netip.MustParseAddrPort("127.0.0.1:1")
	for _, tc := range []struct {
		c     metaq.Command
		value string
		code  int
		msg   string
	}{
		{metaq.Command{Topic: "t", Checksum: 12345}, "abc", metaq.InternalServerError, "Checksum failure"},
		{metaq.Command{Topic: "t", Flag: 1, Checksum: metaq.NoChecksum}, "\x00\x00\x00\x09ab", metaq.BadRequest, "attribute"},
		{metaq.Command{Topic: "t", Flag: 1, Checksum: metaq.NoChecksum}, "\x00\x00\x00\x01\x01ab", metaq.BadRequest, "0x01"},
		{metaq.Command{Topic: "t", Partition: 9, Checksum: metaq.NoChecksum}, "abc", metaq.Forbidden, "no such partition"},
		{metaq.Command{Topic: "t", TxKey: "TX:1", Checksum: metaq.NoChecksum}, "abc", metaq.BadRequest, "transactional"},
	} {
		tc.c.Kind, tc.c.Opaque = metaq.Put, 77
		code, msg, o := result(t, r.srv.Put(nil, &tc.c, []byte(tc.value), born))
		if code != tc.code || o != 77 || !strings.Contains(msg, tc.msg) {
			t.Errorf("%+v: %d %q", tc.c, code, msg)
		}
	}
	if n := r.st.MaxQueueOffset("t", 0); n != 0 {
		t.Fatalf("refused puts stored %d messages", n)
	}
}

// TestPositionsSurviveRestart: after a restart the index is rebuilt from
// the store and gives the same positions, also when a message stored by
// the remoting path sits between text puts.
func TestPositionsSurviveRestart(t *testing.T) {
	r := newRig(t)
	r.put("t", 0, 0, []byte("one"))
	// A remoting-style message: no METAQ_ properties.
	if _, err := r.st.Append(context.Background(), &storage.Message{Topic: "t", QueueID: 0, Flag: 3, Body: []byte("remoting")}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); r.st.MaxQueueOffset("t", 0) < 2 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	_, p3 := r.put("t", 0, 0, []byte("three"))
	if want := int64(23 + 28); p3 != want {
		t.Fatalf("third message at %d, want %d", p3, want)
	}
	r.waitDispatched("t", 0, 3)
	_, before := r.get("t", 0, 0, 1<<20)
	r.reopen()
	_, after := r.get("t", 0, 0, 1<<20)
	if !bytes.Equal(before, after) {
		t.Fatalf("after restart\n%x\nwant\n%x", after, before)
	}
	_, s := r.get("t", 0, p3, 100)
	if m, _, err := metaq.DecodeMessage(s); err != nil || string(m.Payload) != "three" {
		t.Fatalf("at %d after restart: %q %v", p3, m.Payload, err)
	}
	msgs, _, _ := metaq.DecodeSet(after)
	if m := msgs[1]; string(m.Payload) != "remoting" || m.Flag != 2 || m.HasAttr {
		t.Fatalf("remoting message read as %+v", m)
	}
	if _, p4 := r.put("t", 0, 0, []byte("four")); p4 != p3+25 {
		t.Fatalf("fourth at %d, want %d", p4, p3+25)
	}
}

// TestPutBatches: puts submitted while a queue's writer appends wait and
// go in its next batch, in the order submitted, at contiguous positions.
func TestPutBatches(t *testing.T) {
	r := newRig(t)
	entered, release := make(chan int, 10), make(chan struct{})
	r.hold = func(n int) {
		entered <- n
		<-release
	}
	born := netip.MustParseAddrPort("127.0.0.1:1")
	put := func(i int) *PendingPut {
		v := []byte(fmt.Sprintf("m%d", i))
		p, refused := r.srv.Submit(nil, &metaq.Command{Kind: metaq.Put, Topic: "t", Checksum: metaq.NoChecksum, Opaque: int32(i)}, v, born)
		if refused != nil {
			t.Fatalf("submit %d: %q", i, refused)
		}
		return p
	}
	answers := make(chan string, 10)
	first := put(0)
	go func() { answers <- string(r.srv.Wait(nil, first)) }()
	if n := <-entered; n != 1 {
		t.Fatalf("first batch of %d", n)
	}
	var rest []*PendingPut
	for i := 1; i < 6; i++ {
		rest = append(rest, put(i))
	}
	for _, p := range rest {
		go func() { answers <- string(r.srv.Wait(nil, p)) }()
	}
	release <- struct{}{}
	if n := <-entered; n != 5 {
		t.Fatalf("second batch of %d, want 5", n)
	}
	release <- struct{}{}
	got := map[int32]string{}
	for range 6 {
		a := []byte(<-answers)
		code, msg, o := result(t, a)
		if code != metaq.Success {
			t.Fatalf("answer %q", a)
		}
		got[o] = msg
	}
	for i := range int32(6) {
		var id, pos int64
		var p int32
		if _, err := fmt.Sscanf(got[i], "%d %d %d", &id, &p, &pos); err != nil || pos != int64(i)*22 {
			t.Fatalf("put %d answered %q, want position %d", i, got[i], i*22)
		}
	}
	r.hold = nil
	r.waitDispatched("t", 0, 6)
	_, set := r.get("t", 0, 0, 1000)
	msgs, _, _ := metaq.DecodeSet(set)
	for i, m := range msgs {
		if string(m.Payload) != fmt.Sprintf("m%d", i) {
			t.Fatalf("message %d = %q", i, m.Payload)
		}
	}
}
