package protocol

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
)

// ErrBadMsgID: a string is not an offset message id.
var ErrBadMsgID = errors.New("protocol: bad offset message id")

const upperHex = "0123456789ABCDEF"

// AppendOffsetMsgID appends RocketMQ's offset message id (the "msgId" of a
// send answer, MessageDecoder.createMessageId): upper-case hex of the store
// host's IP (4 or 16 bytes), its port as 4 bytes, and the commit-log offset
// as 8 bytes: 32 characters for IPv4, 56 for IPv6.
func AppendOffsetMsgID(dst []byte, host netip.AddrPort, offset int64) []byte {
	var raw [28]byte
	ip := host.Addr().Unmap()
	n := 0
	if ip.Is4() {
		a := ip.As4()
		n = copy(raw[:], a[:])
	} else {
		a := ip.As16()
		n = copy(raw[:], a[:])
	}
	binary.BigEndian.PutUint32(raw[n:], uint32(host.Port()))
	binary.BigEndian.PutUint64(raw[n+4:], uint64(offset))
	for _, b := range raw[:n+12] {
		dst = append(dst, upperHex[b>>4], upperHex[b&0xF])
	}
	return dst
}

// OffsetMsgID is AppendOffsetMsgID as a string.
func OffsetMsgID(host netip.AddrPort, offset int64) string {
	return string(AppendOffsetMsgID(make([]byte, 0, 56), host, offset))
}

// ParseOffsetMsgID decodes an offset message id (either case of hex) into
// the store host and the commit-log offset (VIEW_MESSAGE_BY_ID).
func ParseOffsetMsgID(id string) (netip.AddrPort, int64, error) {
	var raw [28]byte
	if len(id) != 32 && len(id) != 56 {
		return netip.AddrPort{}, 0, fmt.Errorf("%w: %q has %d characters, want 32 or 56", ErrBadMsgID, id, len(id))
	}
	n, err := hex.Decode(raw[:], []byte(id))
	if err != nil {
		return netip.AddrPort{}, 0, fmt.Errorf("%w: %q: %v", ErrBadMsgID, id, err)
	}
	ipLen := n - 12
	ip, _ := netip.AddrFromSlice(raw[:ipLen])
	port := binary.BigEndian.Uint32(raw[ipLen:])
	if port > 0xFFFF {
		return netip.AddrPort{}, 0, fmt.Errorf("%w: %q: port %d", ErrBadMsgID, id, port)
	}
	off := int64(binary.BigEndian.Uint64(raw[ipLen+4:]))
	return netip.AddrPortFrom(ip, uint16(port)), off, nil
}
