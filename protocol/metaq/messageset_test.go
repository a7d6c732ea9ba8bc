package metaq

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"testing"
)

// decodeFromSpec decodes a set by MetaQ's layout written out field by
// field, independent of DecodeMessage.
func decodeFromSpec(t *testing.T, set []byte) (lens []int, flags []int32, datas [][]byte) {
	t.Helper()
	for len(set) >= 20 {
		n := int(binary.BigEndian.Uint32(set[0:4]))
		sum := binary.BigEndian.Uint32(set[4:8])
		flag := int32(binary.BigEndian.Uint32(set[16:20]))
		if len(set) < 20+n {
			break
		}
		data := set[20 : 20+n]
		if want := crc32.ChecksumIEEE(data) & 0x7FFFFFFF; sum != want {
			t.Fatalf("checksum %d, want %d", sum, want)
		}
		lens, flags, datas = append(lens, 20+n), append(flags, flag), append(datas, data)
		set = set[20+n:]
	}
	return
}

func TestMessageSetRoundTrip(t *testing.T) {
	var set []byte
	set = AppendMessage(set, 1, 4, false, nil, []byte("hello"))
	set = AppendMessage(set, 2, 6, true, []byte("attr"), []byte("world"))
	set = AppendMessage(set, 3, 1, false, nil, nil) // the attribute bit cleared: none given
	lens, flags, datas := decodeFromSpec(t, set)
	if len(lens) != 3 || lens[0] != EncodedLen(false, 0, 5) || lens[1] != EncodedLen(true, 4, 5) || lens[2] != 20 {
		t.Fatalf("lens %v", lens)
	}
	if flags[0] != 4 || flags[1] != 7 || flags[2] != 0 {
		t.Fatalf("flags %v", flags)
	}
	if string(datas[1]) != "\x00\x00\x00\x04attrworld" {
		t.Fatalf("data with attribute %q", datas[1])
	}
	msgs, used, err := DecodeSet(set)
	if err != nil || used != len(set) || len(msgs) != 3 {
		t.Fatalf("DecodeSet: %d msgs, used %d of %d, %v", len(msgs), used, len(set), err)
	}
	if m := msgs[1]; m.ID != 2 || !m.HasAttr || string(m.Attr) != "attr" || string(m.Payload) != "world" {
		t.Fatalf("msg 1: %+v", m)
	}
	// A cut set: the whole messages come back, the cut one is left.
	for cut := 0; cut < len(set); cut++ {
		msgs, used, err := DecodeSet(set[:cut])
		if err != nil {
			t.Fatalf("cut %d: %v", cut, err)
		}
		want := 0
		for _, l := range lens {
			if want+l > cut {
				break
			}
			want += l
		}
		if used != want {
			t.Fatalf("cut %d: used %d, want %d (%d msgs)", cut, used, want, len(msgs))
		}
	}
	bad := bytes.Clone(set)
	bad[22] ^= 1
	if _, _, err := DecodeSet(bad); !errors.Is(err, ErrChecksum) {
		t.Fatalf("flipped byte: %v", err)
	}
}

func TestSplitData(t *testing.T) {
	for _, tc := range []struct {
		flag    int32
		data    string
		attr    string
		payload string
		err     bool
	}{
		{0, "abc", "", "abc", false},
		{1, "\x00\x00\x00\x01xabc", "x", "abc", false},
		{1, "\x00\x00\x00\x00", "", "", false},
		{1, "\x00\x00", "", "", true},
		{1, "\x00\x00\x00\x09abc", "", "", true},
		{1, "\xff\xff\xff\xffabc", "", "", true},
	} {
		attr, payload, _, err := SplitData(tc.flag, []byte(tc.data))
		if (err != nil) != tc.err || string(attr) != tc.attr || string(payload) != tc.payload {
			t.Errorf("SplitData(%d, %q) = %q %q %v", tc.flag, tc.data, attr, payload, err)
		}
	}
}

func TestChecksum(t *testing.T) {
	// java.util.zip.CRC32 of "hello" is 0x3610a686; MetaQ masks the sign bit.
	if got := Checksum([]byte("hello")); got != 0x3610a686&0x7FFFFFFF {
		t.Fatalf("Checksum = %#x", got)
	}
}
