package record

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math/rand"
	"net/netip"
	"testing"
)

func sampleFields() Fields {
	return Fields{
		QueueID:          3,
		Flag:             7,
		QueueOffset:      42,
		PhysOffset:       4096,
		SysFlag:          FlagMultiTags,
		BornTimestamp:    1_700_000_000_123,
		BornHost:         netip.MustParseAddrPort("10.1.2.3:54321"),
		StoreTimestamp:   1_700_000_000_456,
		StoreHost:        netip.MustParseAddrPort("192.168.0.9:10911"),
		ReconsumeTimes:   2,
		PreparedTxOffset: 0,
		Topic:            "TopicTest",
		Body:             []byte("hello, samsa"),
		Properties:       []byte("TAGS\x01TagA\x02KEYS\x01k1\x02"),
	}
}

// handEncode builds f's record field by field from the layout table in
// record.go, independently of Encode.
func handEncode(f Fields) []byte {
	var b bytes.Buffer
	w := func(v any) { binary.Write(&b, binary.BigEndian, v) }
	props := append([]byte(nil), f.Properties...)
	if len(props) > 0 && props[len(props)-1] != 0x02 {
		props = append(props, 0x02)
	}
	propLen := len(props) + 20
	total := 4 + 4 + 4 + 4 + 4 + 8 + 8 + 4 + 8 + 8 + 8 + 8 + 4 + 8 + 4 + len(f.Body) + 1 + len(f.Topic) + 2 + propLen
	w(int32(total))
	w(int32(-626843481))
	w(int32(crc32.ChecksumIEEE(f.Body) & 0x7fffffff))
	w(f.QueueID)
	w(f.Flag)
	w(f.QueueOffset)
	w(f.PhysOffset)
	w(f.SysFlag)
	w(f.BornTimestamp)
	a := f.BornHost.Addr().As4()
	b.Write(a[:])
	w(int32(f.BornHost.Port()))
	w(f.StoreTimestamp)
	a = f.StoreHost.Addr().As4()
	b.Write(a[:])
	w(int32(f.StoreHost.Port()))
	w(f.ReconsumeTimes)
	w(f.PreparedTxOffset)
	w(int32(len(f.Body)))
	b.Write(f.Body)
	b.WriteByte(byte(len(f.Topic)))
	b.WriteString(f.Topic)
	w(int16(propLen))
	b.Write(props)
	// The CRC covers all but the 20 reserved bytes (RocketMQ's
	// checkSize = msgLen - CRC32_RESERVED_LEN).
	crc := crc32.ChecksumIEEE(b.Bytes()) & 0x7fffffff
	b.WriteString("__CRC32#\x01")
	digits := fmt.Sprintf("%010d", crc)
	for i := 9; i >= 0; i-- { // least significant digit first
		b.WriteByte(digits[i])
	}
	b.WriteByte(0x02)
	return b.Bytes()
}

func TestLayoutGolden(t *testing.T) {
	for _, props := range []string{"TAGS\x01TagA\x02KEYS\x01k1\x02", "TAGS\x01TagA", ""} {
		f := sampleFields()
		f.Properties = []byte(props)
		want := handEncode(f)
		n, err := f.Size()
		if err != nil || n != len(want) {
			t.Fatalf("props %q: Size = %d, %v; want %d", props, n, err, len(want))
		}
		got := make([]byte, n+10)
		if m, err := Encode(got, &f); err != nil || m != n {
			t.Fatalf("Encode = %d, %v", m, err)
		}
		if !bytes.Equal(got[:n], want) {
			t.Fatalf("props %q: encoding differs from the layout\n got %x\nwant %x", props, got[:n], want)
		}
		if StoreTimeOffset(f.SysFlag) != 56 || bodyLenOffset(f.SysFlag) != 84 {
			t.Fatalf("offsets: store time %d, body %d", StoreTimeOffset(f.SysFlag), bodyLenOffset(f.SysFlag))
		}
	}
}

func TestCRCDigitsLeastSignificantFirst(t *testing.T) {
	d := make([]byte, 10)
	putCRCDigits(d, 1234567890)
	if string(d) != "0987654321" {
		t.Fatalf("digits %q", d)
	}
	putCRCDigits(d, 7)
	if string(d) != "7000000000" {
		t.Fatalf("digits %q", d)
	}
}

func randomFields(rng *rand.Rand) Fields {
	host := func() netip.AddrPort {
		if rng.Intn(3) == 0 {
			var a [16]byte
			rng.Read(a[:])
			a[0] = 0x20
			return netip.AddrPortFrom(netip.AddrFrom16(a), uint16(rng.Intn(65536)))
		}
		var a [4]byte
		rng.Read(a[:])
		return netip.AddrPortFrom(netip.AddrFrom4(a), uint16(rng.Intn(65536)))
	}
	topic := make([]byte, 1+rng.Intn(MaxTopicLen))
	for i := range topic {
		topic[i] = 'a' + byte(rng.Intn(26))
	}
	body := make([]byte, rng.Intn(3000))
	rng.Read(body)
	var props []byte
	for i := rng.Intn(5); i > 0; i-- {
		props = AppendProperty(props, fmt.Sprintf("k%d", i), fmt.Sprintf("v%d", rng.Int()))
	}
	if len(props) > 0 && rng.Intn(3) == 0 {
		props = props[:len(props)-1] // no trailing separator
	}
	return Fields{
		QueueID: rng.Int31(), Flag: rng.Int31(), QueueOffset: rng.Int63(), PhysOffset: rng.Int63(),
		SysFlag: rng.Int31() &^ (FlagBornHostV6 | FlagStoreHostV6), BornTimestamp: rng.Int63(),
		BornHost: host(), StoreTimestamp: rng.Int63(), StoreHost: host(),
		ReconsumeTimes: rng.Int31(), PreparedTxOffset: rng.Int63(),
		Topic: string(topic), Body: body, Properties: props,
	}
}

func TestRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	buf := make([]byte, 1<<16)
	for i := 0; i < 2000; i++ {
		f := randomFields(rng)
		n, err := Encode(buf, &f)
		if err != nil {
			t.Fatal(err)
		}
		rec := buf[:n]
		var r Record
		if err := Decode(rec, f.PhysOffset, &r); err != nil {
			t.Fatalf("#%d: %v", i, err)
		}
		if r.QueueID != f.QueueID || r.QueueOffset != f.QueueOffset || r.StoreHost != f.StoreHost ||
			r.BornHost != f.BornHost || string(r.Topic) != f.Topic || !bytes.Equal(r.Body, f.Body) ||
			r.StoreTimestamp != f.StoreTimestamp || r.PreparedTxOffset != f.PreparedTxOffset {
			t.Fatalf("#%d: decoded %+v from %+v", i, r, f)
		}
		g := r.Fields()
		again := make([]byte, n)
		if _, err := Encode(again, &g); err != nil || !bytes.Equal(again, rec) {
			t.Fatalf("#%d: re-encode differs (%v)", i, err)
		}
		if sz, err := Validate(rec, NoPhys); err != nil || sz != n {
			t.Fatalf("#%d: Validate = %d, %v", i, sz, err)
		}
	}
}

func TestSealPatches(t *testing.T) {
	f := sampleFields()
	buf := make([]byte, 512)
	n, err := EncodeUnsealed(buf, &f)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Validate(buf[:n], NoPhys); !errors.Is(err, ErrRecordCRC) {
		t.Fatalf("unsealed record validates: %v", err)
	}
	Seal(buf[:n], 9, 1<<40, 123)
	var r Record
	if err := Decode(buf[:n], 1<<40, &r); err != nil {
		t.Fatal(err)
	}
	if r.QueueOffset != 9 || r.PhysOffset != 1<<40 || r.StoreTimestamp != 123 {
		t.Fatalf("got %+v", r)
	}
	if QueueOffsetOf(buf) != 9 || PhysOffsetOf(buf) != 1<<40 || StoreTimestampOf(buf) != 123 {
		t.Fatal("accessors disagree")
	}
}

func TestIPv6Hosts(t *testing.T) {
	f := sampleFields()
	f.BornHost = netip.MustParseAddrPort("[2001:db8::1]:9876")
	f.StoreHost = netip.MustParseAddrPort("[::ffff:10.0.0.1]:10911") // mapped: stored as IPv4
	buf := make([]byte, 512)
	n, err := Encode(buf, &f)
	if err != nil {
		t.Fatal(err)
	}
	var r Record
	if err := Decode(buf[:n], NoPhys, &r); err != nil {
		t.Fatal(err)
	}
	if r.SysFlag&FlagBornHostV6 == 0 || r.SysFlag&FlagStoreHostV6 != 0 {
		t.Fatalf("sysflag %#x", r.SysFlag)
	}
	if r.BornHost != f.BornHost || r.StoreHost.String() != "10.0.0.1:10911" {
		t.Fatalf("hosts %v %v", r.BornHost, r.StoreHost)
	}
	if StoreTimeOffset(r.SysFlag) != 68 {
		t.Fatalf("store time offset %d", StoreTimeOffset(r.SysFlag))
	}
}

func TestValidateErrors(t *testing.T) {
	f := sampleFields()
	good := make([]byte, 512)
	n, _ := Encode(good, &f)
	good = good[:n]
	mut := func(fn func(b []byte) []byte) []byte { return fn(append([]byte(nil), good...)) }
	bodyAt := 84 + 4
	cases := []struct {
		name string
		b    []byte
		phys int64
		want error
	}{
		{"short header", good[:5], NoPhys, ErrTruncated},
		{"torn", good[:n-1], NoPhys, ErrTruncated},
		{"zeros", make([]byte, 200), NoPhys, ErrBadMagic},
		{"magic", mut(func(b []byte) []byte { b[5] ^= 1; return b }), NoPhys, ErrBadMagic},
		{"phys", good, 4097, ErrPhysOffset},
		{"body", mut(func(b []byte) []byte { b[bodyAt] ^= 1; return b }), NoPhys, ErrBodyCRC},
		{"header", mut(func(b []byte) []byte { b[OffQueueID] ^= 1; return b }), NoPhys, ErrRecordCRC},
		{"crc digit", mut(func(b []byte) []byte { b[n-2] = 'x'; return b }), NoPhys, ErrNoCRC},
		{"crc value", mut(func(b []byte) []byte { b[n-11] ^= 1; return b }), NoPhys, ErrRecordCRC},
		{"small", mut(func(b []byte) []byte { binary.BigEndian.PutUint32(b, 20); return b }), NoPhys, ErrBadSize},
		{"body len", mut(func(b []byte) []byte { binary.BigEndian.PutUint32(b[84:], 1<<20); return b }), NoPhys, ErrBadSize},
		{"size vs lengths", mut(func(b []byte) []byte {
			binary.BigEndian.PutUint32(b, uint32(n-1))
			return b
		}), NoPhys, ErrBadSize},
	}
	for _, c := range cases {
		if _, err := Validate(c.b, c.phys); !errors.Is(err, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, err, c.want)
		}
	}
	// A record without the CRC property (e.g. RocketMQ's own without
	// enabledAppendPropCRC) is refused.
	noCRC := handEncode(f)
	noCRC = noCRC[:len(noCRC)-20]
	binary.BigEndian.PutUint32(noCRC, uint32(len(noCRC)))
	pl := int(binary.BigEndian.Uint16(noCRC[len(noCRC)-len(f.Properties)-2:]))
	binary.BigEndian.PutUint16(noCRC[len(noCRC)-len(f.Properties)-2:], uint16(pl-20))
	if _, err := Validate(noCRC, NoPhys); !errors.Is(err, ErrNoCRC) {
		t.Errorf("no CRC property: %v", err)
	}
}

func TestBlank(t *testing.T) {
	b := make([]byte, BlankSize)
	PutBlank(b, 1000)
	n, err := Validate(b, NoPhys)
	if n != 1000 || !errors.Is(err, ErrBlank) {
		t.Fatalf("Validate blank = %d, %v", n, err)
	}
	var r Record
	if err := Decode(b, NoPhys, &r); !errors.Is(err, ErrBlank) {
		t.Fatalf("Decode blank: %v", err)
	}
	size, magic, err := Header(b)
	if size != 1000 || magic != MagicBlank || err != nil {
		t.Fatalf("Header = %d %x %v", size, magic, err)
	}
	if binary.BigEndian.Uint32(b[4:]) != 0xcbd43194 {
		t.Fatalf("blank magic bytes %x", b[4:8])
	}
	PutBlank(b, 4)
	if _, err := Validate(b, NoPhys); !errors.Is(err, ErrBadSize) {
		t.Fatalf("tiny blank: %v", err)
	}
}

func TestMagicBytes(t *testing.T) {
	f := sampleFields()
	b := make([]byte, 512)
	Encode(b, &f)
	if binary.BigEndian.Uint32(b[4:]) != 0xdaa320a7 {
		t.Fatalf("message magic bytes %x", b[4:8])
	}
}

func TestEncodeLimits(t *testing.T) {
	f := sampleFields()
	f.Topic = ""
	if _, err := f.Size(); !errors.Is(err, ErrTopic) {
		t.Fatalf("empty topic: %v", err)
	}
	f.Topic = string(make([]byte, 128))
	if _, err := f.Size(); !errors.Is(err, ErrTopic) {
		t.Fatalf("long topic: %v", err)
	}
	f = sampleFields()
	f.Properties = AppendProperty(nil, "k", string(make([]byte, MaxPropertiesLen-CRCReservedLen-3)))
	if _, err := f.Size(); err != nil {
		t.Fatalf("properties at the limit: %v", err)
	}
	f.Properties = AppendProperty(nil, "k", string(make([]byte, MaxPropertiesLen-CRCReservedLen-2)))
	if _, err := f.Size(); !errors.Is(err, ErrPropertiesTooLong) {
		t.Fatalf("properties over the limit: %v", err)
	}
	f = sampleFields()
	if _, err := Encode(make([]byte, 10), &f); !errors.Is(err, ErrBufferTooSmall) {
		t.Fatalf("small buffer: %v", err)
	}
}

func TestCallerCRCPropertyReplaced(t *testing.T) {
	f := sampleFields()
	f.Properties = []byte("A\x01x\x02__CRC32#\x011111111111\x02B\x01y\x02")
	b := make([]byte, 512)
	n, err := Encode(b, &f)
	if err != nil {
		t.Fatal(err)
	}
	var r Record
	if err := Decode(b[:n], NoPhys, &r); err != nil {
		t.Fatal(err)
	}
	if got := string(r.UserProperties()); got != "A\x01x\x02B\x01y\x02" {
		t.Fatalf("user properties %q", got)
	}
	m := ParseProperties(r.Properties)
	if len(m) != 3 || m["A"] != "x" || m["B"] != "y" || len(m[PropertyCRC32]) != 10 {
		t.Fatalf("parsed %q", m)
	}
}

func TestZeroAllocs(t *testing.T) {
	f := sampleFields()
	buf := make([]byte, 512)
	n, _ := Encode(buf, &f)
	var r Record
	tags := []byte("TagA")
	allocs := testing.AllocsPerRun(100, func() {
		EncodeUnsealed(buf, &f)
		Seal(buf[:n], 1, 2, 3)
		Validate(buf[:n], 2)
		Decode(buf[:n], 2, &r)
		TagsCodeBytes(tags)
		LookupProperty(f.Properties, "KEYS")
		TagsCodeOf(f.Properties)
	})
	if allocs != 0 {
		t.Fatalf("%v allocs per run", allocs)
	}
}
