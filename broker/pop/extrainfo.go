package pop

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ExtraInfo is a popped message's receipt handle, RocketMQ's extraInfo
// (ExtraInfoUtil): space-separated ckQueueOffset, popTime, invisibleTime,
// reviveQid, retry flag ("0" the topic itself, "1"/"2" a POP retry topic),
// brokerName, queueId and, from 5.x, the message's queue offset. RocketMQ's
// clients put it in each message's POP_CK property from the POP answer's
// header and send it back with ACK_MESSAGE and CHANGE_MESSAGE_INVISIBLETIME.
type ExtraInfo struct {
	CkQueueOffset int64
	PopTime       int64 // ms
	InvisibleTime int64 // ms
	ReviveQid     int32
	Retry         string
	BrokerName    string
	QueueID       int32
	QueueOffset   int64 // -1 when the handle has no eighth field
}

// PropPopCK is the message property RocketMQ's client keeps the handle in.
const PropPopCK = "POP_CK"

// ErrBadExtraInfo wraps every reason ParseExtraInfo refuses a handle.
var ErrBadExtraInfo = errors.New("pop: malformed extraInfo")

// maxExtraInfo bounds a handle's length: ten numbers and a broker name.
const maxExtraInfo = 512

// String formats e as RocketMQ's buildExtraInfo does.
func (e ExtraInfo) String() string {
	s := fmt.Sprintf("%d %d %d %d %s %s %d", e.CkQueueOffset, e.PopTime, e.InvisibleTime, e.ReviveQid,
		e.Retry, e.BrokerName, e.QueueID)
	if e.QueueOffset >= 0 {
		s += " " + strconv.FormatInt(e.QueueOffset, 10)
	}
	return s
}

// ParseExtraInfo reads a handle; every field must be there and well
// formed (seven or eight of them).
func ParseExtraInfo(s string) (ExtraInfo, error) {
	if len(s) > maxExtraInfo {
		return ExtraInfo{}, fmt.Errorf("%w: %d bytes", ErrBadExtraInfo, len(s))
	}
	f := strings.Split(s, " ")
	if len(f) != 7 && len(f) != 8 {
		return ExtraInfo{}, fmt.Errorf("%w: %d fields, want 7 or 8 (ckQueueOffset popTime invisibleTime reviveQid retry brokerName queueId [queueOffset])",
			ErrBadExtraInfo, len(f))
	}
	var e ExtraInfo
	var errs []error
	num := func(name, v string, bits int) int64 {
		n, err := strconv.ParseInt(v, 10, bits)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s %q", name, v))
		}
		return n
	}
	e.CkQueueOffset = num("ckQueueOffset", f[0], 64)
	e.PopTime = num("popTime", f[1], 64)
	e.InvisibleTime = num("invisibleTime", f[2], 64)
	e.ReviveQid = int32(num("reviveQid", f[3], 32))
	e.Retry = f[4]
	e.BrokerName = f[5]
	e.QueueID = int32(num("queueId", f[6], 32))
	e.QueueOffset = -1
	if len(f) == 8 {
		e.QueueOffset = num("queueOffset", f[7], 64)
	}
	if e.Retry != "0" && e.Retry != "1" && e.Retry != "2" {
		errs = append(errs, fmt.Errorf("retry flag %q", e.Retry))
	}
	if len(errs) > 0 {
		return ExtraInfo{}, fmt.Errorf("%w: %w", ErrBadExtraInfo, errors.Join(errs...))
	}
	return e, nil
}
