package broker

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"

	"github.com/samsamq/samsa/protocol"
	"github.com/samsamq/samsa/storage"
)

// decoder is a custom header (protocol.CustomHeader's Decode half).
type decoder interface {
	Decode(m map[string]string) error
}

// decodeHeader decodes req's ext fields into h; on failure it returns the
// SYSTEM_ERROR response RocketMQ gives a RemotingCommandException.
func decodeHeader(req *protocol.Command, h decoder) *protocol.Command {
	if err := h.Decode(req.ExtFields); err != nil {
		return protocol.NewResponse(req, protocol.SystemError, "bad request header: "+err.Error())
	}
	return nil
}

// respond makes a response with a header's fields.
func respond(req *protocol.Command, code int32, remark string, ext map[string]string) *protocol.Command {
	r := protocol.NewResponse(req, code, remark)
	r.ExtFields = ext
	return r
}

// errorResponse maps a store error to a response code and a remark that
// says what happened. It never answers SUCCESS: a broken, full or closed
// store refuses the message.
func errorResponse(req *protocol.Command, err error) *protocol.Command {
	switch {
	case errors.Is(err, storage.ErrMessageTooLarge), errors.Is(err, storage.ErrInvalidMessage):
		return protocol.NewResponse(req, protocol.MessageIllegal, "message illegal: "+err.Error())
	case errors.Is(err, storage.ErrDiskFull):
		return protocol.NewResponse(req, protocol.ServiceNotAvailable, "service not available now: the broker's disk is full ("+err.Error()+")")
	case errors.Is(err, storage.ErrBroken):
		return protocol.NewResponse(req, protocol.SystemError, "the broker's store is broken after a failed write or fsync; nothing more is accepted until it is restarted: "+err.Error())
	case errors.Is(err, storage.ErrResourceBusy):
		return protocol.NewResponse(req, protocol.SystemBusy, busyRemark(err))
	case errors.Is(err, storage.ErrFenced): // controller mode: no longer (or not yet) the master
		return protocol.NewResponse(req, protocol.ServiceNotAvailable, slaveSendRemark+" ("+err.Error()+")")
	case errors.Is(err, storage.ErrClosed):
		return protocol.NewResponse(req, protocol.ServiceNotAvailable, "service not available now: the broker is shutting down")
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return protocol.NewResponse(req, protocol.SystemBusy, "broker busy: the store's write queue stayed full ("+err.Error()+")")
	}
	return protocol.NewResponse(req, protocol.SystemError, "store error: "+err.Error())
}

// busyRemark is the remark of a SYSTEM_BUSY answer to a store call that
// ran out of file descriptors or memory (storage.ErrResourceBusy): the
// store refused that one call and carries on.
func busyRemark(err error) string {
	return "broker busy: the store is out of file descriptors or memory for now; retry later (" + err.Error() + ")"
}

// offsetMsgID is RocketMQ's offset message id: store host IPv4 (4 bytes),
// port (4), commit-log offset (8), as 32 upper-case hex digits.
func offsetMsgID(host netip.AddrPort, physOffset int64) string {
	var b [16]byte
	ip := host.Addr().As4()
	copy(b[:4], ip[:])
	binary.BigEndian.PutUint32(b[4:], uint32(host.Port()))
	binary.BigEndian.PutUint64(b[8:], uint64(physOffset))
	return strings.ToUpper(hex.EncodeToString(b[:]))
}

// parseOffsetMsgID is the inverse of offsetMsgID.
func parseOffsetMsgID(id string) (netip.AddrPort, int64, error) {
	b, err := hex.DecodeString(id)
	if err != nil || len(b) != 16 {
		return netip.AddrPort{}, 0, fmt.Errorf("broker: %q is not an offset message id", id)
	}
	ip := netip.AddrFrom4([4]byte(b[:4]))
	return netip.AddrPortFrom(ip, uint16(binary.BigEndian.Uint32(b[4:]))), int64(binary.BigEndian.Uint64(b[8:])), nil
}

// bornHost is the connection's remote address.
func (c *conn) bornHost() netip.AddrPort { return c.born }

// ipv4AddrPort is an address as an IPv4 AddrPort (the record layout here
// stores IPv4 hosts; an IPv6 peer maps to 0.0.0.0).
func ipv4AddrPort(addr net.Addr) netip.AddrPort {
	if ta, ok := addr.(*net.TCPAddr); ok {
		ap := ta.AddrPort()
		a := ap.Addr().Unmap()
		if a.Is4() {
			return netip.AddrPortFrom(a, ap.Port())
		}
		return netip.AddrPortFrom(netip.IPv4Unspecified(), ap.Port())
	}
	return netip.AddrPortFrom(netip.IPv4Unspecified(), 0)
}

func itoa(n int) string { return strconv.Itoa(n) }
