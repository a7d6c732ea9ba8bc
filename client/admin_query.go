package client

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"time"

	"github.com/samsamq/samsa/protocol"
)

// QueryOptions bound Admin.QueryMessages.
type QueryOptions struct {
	// Begin and End bound the messages' store time (zero: unbounded).
	Begin, End time.Time
	// Max is how many messages each broker returns at most (default 32;
	// a broker answers at most 64, RocketMQ's maxMsgsNumBatch).
	Max int
	// Unique looks the key up as a message id (UNIQ_KEY) rather than as
	// one of the KEYS.
	Unique bool
}

// ErrMessageNotFound is returned by ViewMessage when no broker has the id.
var ErrMessageNotFound = errors.New("client: message not found")

// QueryMessages asks every broker of topic (its master, else a slave) for
// the messages whose KEYS hold key (or whose id is key, with o.Unique),
// through their key index (QUERY_MESSAGE), as RocketMQ's
// MQAdminImpl.queryMessage: answers are checked again here, and returned
// newest first.
func (a *Admin) QueryMessages(ctx context.Context, topic, key string, o QueryOptions) ([]*MessageExt, error) {
	ctx, cancel := a.in.ctxTimeout(ctx)
	defer cancel()
	if o.Max <= 0 {
		o.Max = 32
	}
	a.in.refreshRoute(ctx, topic)
	r, err := a.in.route(ctx, topic)
	if err != nil {
		return nil, err
	}
	begin, end := int64(0), int64(math.MaxInt64)
	if !o.Begin.IsZero() {
		begin = o.Begin.UnixMilli()
	}
	if !o.End.IsZero() {
		end = o.End.UnixMilli()
	}
	names := make([]string, 0, len(r.brokers))
	for n := range r.brokers {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []*MessageExt
	var errs []error
	for _, name := range names {
		addr := pickAddr(r.brokers[name], true)
		if addr == "" {
			continue
		}
		h := protocol.QueryMessageRequestHeader{Topic: topic, Key: key, MaxNum: int32(o.Max), BeginTimestamp: begin, EndTimestamp: end}
		req := protocol.NewRequest(protocol.QueryMessage, h.Encode(), nil)
		if o.Unique {
			req.SetExt("_UNIQUE_KEY_QUERY", "true")
		}
		resp, err := a.in.invoke(ctx, addr, req)
		if resp != nil && resp.Code == protocol.QueryNotFound {
			continue
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("client: query %s on %s: %w", key, addr, err))
			continue
		}
		msgs, err := decodeMessages(resp.Body, name)
		if err != nil {
			errs = append(errs, fmt.Errorf("client: query %s on %s: %w", key, addr, err))
		}
		for _, m := range msgs {
			if m.Topic == topic && (o.Unique && m.MsgID == key || !o.Unique && slices.Contains(m.Keys, key)) {
				out = append(out, m)
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].StoreTime.After(out[j].StoreTime) })
	if len(out) == 0 && len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

// ViewMessage returns the message with id: an offset message id (the
// broker's: store host and commit-log offset, VIEW_MESSAGE_BY_ID to that
// broker) or a producer's message id (UNIQ_KEY), found through the key
// index of topic, or of every topic when topic is "". ErrMessageNotFound
// when no broker has it.
func (a *Admin) ViewMessage(ctx context.Context, topic, id string) (*MessageExt, error) {
	ctx, cancel := a.in.ctxTimeout(ctx)
	defer cancel()
	if m, err := a.viewByOffsetID(ctx, id); err != nil || m != nil {
		return m, err
	}
	topics := []string{topic}
	if topic == "" {
		all, err := a.Topics(ctx)
		if err != nil {
			return nil, err
		}
		topics = all
	}
	for _, t := range topics {
		ms, err := a.QueryMessages(ctx, t, id, QueryOptions{Unique: true})
		if err != nil && topic != "" {
			return nil, err
		}
		if len(ms) > 0 {
			return ms[len(ms)-1], nil // the first stored (a resend may have stored it again)
		}
	}
	return nil, fmt.Errorf("%w: no message with id %s", ErrMessageNotFound, id)
}

// viewByOffsetID reads the message id names if id is an offset message
// id of a broker of this cluster (nil, nil if it is not: a producer's id
// has the same length).
func (a *Admin) viewByOffsetID(ctx context.Context, id string) (*MessageExt, error) {
	host, off, err := protocol.ParseOffsetMsgID(id)
	if err != nil {
		return nil, nil
	}
	ci, err := a.ClusterInfo(ctx)
	if err != nil {
		return nil, err
	}
	for name, b := range ci.BrokerAddrTable {
		for _, addr := range b.BrokerAddrs {
			if addr != host.String() {
				continue
			}
			h := protocol.ViewMessageRequestHeader{Offset: off}
			resp, err := a.in.invoke(ctx, addr, protocol.NewRequest(protocol.ViewMessageByID, h.Encode(), nil))
			if err != nil {
				return nil, nil // not a record there: try it as a producer's id
			}
			ms, err := decodeMessages(resp.Body, name)
			if err != nil || len(ms) != 1 || ms[0].CommitLogOffset != off {
				return nil, nil
			}
			return ms[0], nil
		}
	}
	return nil, nil
}
