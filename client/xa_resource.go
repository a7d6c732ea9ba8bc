package client

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/samsamq/samsa/protocol"
	"github.com/samsamq/samsa/storage/record"
)

// XA: a broker as an X/Open XA resource manager. An XAResource is one
// broker's side of global transactions: Start a branch, Send its messages
// (stored as half messages, invisible to consumers), End it, Prepare it
// (the broker makes it durable: it survives a crash and a restart, and
// only Commit or Rollback ends it), then Commit or Rollback; Recover lists
// the prepared branches after a coordinator's restart. A coordinator
// (package client/xa) drives it with other resources (a PostgreSQL
// database) and logs its decisions.

// XID names a branch: a format id, a global transaction id (1 to 64
// bytes) and a branch qualifier (0 to 64 bytes).
type XID struct {
	FormatID int32
	GTRID    []byte
	BQUAL    []byte
}

// String is "<formatId>.<gtrid hex>.<bqual hex>", the broker's name for
// the branch (its messages' SAMSA_XID property).
func (x XID) String() string {
	return strconv.FormatInt(int64(x.FormatID), 10) + "." + hex.EncodeToString(x.GTRID) + "." + hex.EncodeToString(x.BQUAL)
}

// Validate reports an XID XA does not allow.
func (x XID) Validate() error {
	if len(x.GTRID) == 0 || len(x.GTRID) > 64 || len(x.BQUAL) > 64 || x.FormatID == -1 {
		return fmt.Errorf("client: XID %s: want a format id other than -1, 1 to 64 bytes of global id and at most 64 of branch qualifier", x)
	}
	return nil
}

// XA return codes and flags (xa.h) the broker answers with.
const (
	XAOK         = 0
	XARDOnly     = 3
	XARBRollback = 100
	XAErrRMErr   = -3
	XAErrNoTA    = -4
	XAErrInval   = -5
	XAErrProto   = -6
	XAErrRMFail  = -7
	XAErrDupID   = -8

	TMNoFlags = 0
	TMJoin    = 0x00200000
	TMResume  = 0x08000000
	TMSuccess = 0x04000000
	TMFail    = 0x20000000
)

// XAError is a broker's XA answer other than XA_OK and XA_RDONLY.
type XAError struct {
	Code int    // xa.h's code
	Msg  string // the broker's reason
}

func (e *XAError) Error() string { return fmt.Sprintf("client: XA error %d: %s", e.Code, e.Msg) }

// IsXACode reports whether err is an *XAError with this code.
func IsXACode(err error, code int) bool {
	var e *XAError
	return errors.As(err, &e) && e.Code == code
}

// XAPrepared is a prepared branch Recover lists.
type XAPrepared struct {
	XID        XID
	PreparedAt time.Time
	Messages   int
}

// xaGroup and propXID: the producer group and property of a branch's
// half messages (the broker's package xa).
const (
	xaGroup = "SAMSA_XA"
	propXID = "SAMSA_XID"
)

// XAResource is one broker's XA branches, used through a Producer. Safe
// for concurrent use; one branch's verbs must not overlap.
type XAResource struct {
	p      *Producer
	broker string

	mu struct {
		sync.Mutex
		halves map[string][][2]int64 // by XID: messages sent, not yet listed by End
	}
}

// XAResource returns the XA resource of broker brokerName (a master the
// producer's routes name).
func (p *Producer) XAResource(brokerName string) *XAResource {
	r := &XAResource{p: p, broker: brokerName}
	r.mu.halves = map[string][][2]int64{}
	return r
}

// Broker is the broker's name.
func (r *XAResource) Broker() string { return r.broker }

// addr is the broker's master address, from the routes or the name server.
func (r *XAResource) addr(ctx context.Context) (string, error) {
	if a := r.p.in.brokerAddr(r.broker, false); a != "" {
		return a, nil
	}
	a := &Admin{opts: r.p.opts.ClientOptions, in: r.p.in} // the producer's connections; not closed
	ci, err := a.ClusterInfo(ctx)
	if err != nil {
		return "", err
	}
	if m := ci.BrokerAddrTable[r.broker].BrokerAddrs[protocol.MasterID]; m != "" {
		return m, nil
	}
	return "", fmt.Errorf("%w: broker %s has no master", ErrNoRoute, r.broker)
}

// invoke sends an XA request for x and reads its xaCode.
func (r *XAResource) invoke(ctx context.Context, code int32, x *XID, ext map[string]string, body []byte) (int, *protocol.Command, error) {
	ctx, cancel := r.p.sendContext(ctx)
	defer cancel()
	addr, err := r.addr(ctx)
	if err != nil {
		return 0, nil, err
	}
	if ext == nil {
		ext = map[string]string{}
	}
	if x != nil {
		if err := x.Validate(); err != nil {
			return 0, nil, err
		}
		ext["formatId"] = strconv.FormatInt(int64(x.FormatID), 10)
		ext["gtrid"], ext["bqual"] = hex.EncodeToString(x.GTRID), hex.EncodeToString(x.BQUAL)
	}
	resp, err := r.p.in.rc.Invoke(ctx, addr, protocol.NewRequest(code, ext, body))
	if err != nil {
		return 0, nil, err
	}
	xc, perr := strconv.Atoi(resp.ExtFields["xaCode"])
	if perr != nil {
		if resp.Code != protocol.Success {
			return 0, nil, responseError(addr, resp)
		}
		return 0, nil, fmt.Errorf("client: broker %s answered an XA request without xaCode", r.broker)
	}
	if xc != XAOK && xc != XARDOnly {
		return xc, resp, &XAError{Code: xc, Msg: resp.Remark}
	}
	return xc, resp, nil
}

// Start begins a branch (TMNoFlags), or joins or resumes one.
func (r *XAResource) Start(ctx context.Context, x XID, flags int) error {
	_, _, err := r.invoke(ctx, protocol.XAStart, &x, map[string]string{"flags": strconv.Itoa(flags)}, nil)
	return err
}

// Send stores m as a message of branch x (started, not ended): a half
// message, invisible until the branch commits. Its topic must have a
// writable queue on the resource's broker.
func (r *XAResource) Send(ctx context.Context, x XID, m *Message) (*SendResult, error) {
	p := r.p
	if err := p.checkHalf(m, "an XA"); err != nil {
		return nil, err
	}
	ctx, cancel := p.sendContext(ctx)
	defer cancel()
	rt, err := p.writeRoute(ctx, m.Topic)
	if err != nil {
		return nil, err
	}
	q, err := p.queueOn(rt, m, r.broker, "")
	if err != nil {
		return nil, err
	}
	addr := rt.masterAddr(r.broker)
	half := halfMessage(m, xaGroup, propXID, x.String())
	uniq := p.uniqID(&half)
	req := p.request(&half, q, uniq, p.opts.Clock())
	h := req.Header.(*protocol.SendMessageRequestHeaderV2)
	h.SysFlag |= record.TransactionPrepared
	h.ProducerGroup = xaGroup
	resp, err := p.in.rc.Invoke(ctx, addr, req)
	if err != nil {
		return nil, err
	}
	res, err := result(addr, q, uniq, resp)
	if res != nil {
		phys, perr := offsetOfMsgID(res.OffsetMsgID)
		if perr != nil {
			return nil, perr
		}
		r.mu.Lock()
		r.mu.halves[x.String()] = append(r.mu.halves[x.String()], [2]int64{res.QueueOffset, phys})
		r.mu.Unlock()
	}
	return res, err
}

// End ends the branch's association (TMSuccess, or TMFail: it can only
// roll back), telling the broker which messages it holds.
func (r *XAResource) End(ctx context.Context, x XID, flags int) error {
	r.mu.Lock()
	hs := r.mu.halves[x.String()]
	delete(r.mu.halves, x.String())
	r.mu.Unlock()
	var b strings.Builder
	for _, h := range hs {
		fmt.Fprintf(&b, "%d:%d\n", h[0], h[1])
	}
	_, _, err := r.invoke(ctx, protocol.XAEnd, &x, map[string]string{"flags": strconv.Itoa(flags)}, []byte(b.String()))
	return err
}

// Prepare makes the branch durable: XAOK, or XARDOnly when it holds no
// message (nothing to commit; the broker forgets it).
func (r *XAResource) Prepare(ctx context.Context, x XID) (int, error) {
	c, _, err := r.invoke(ctx, protocol.XAPrepare, &x, nil, nil)
	return c, err
}

// Commit delivers the branch's messages: prepared (onePhase false) or
// ended (onePhase true, no prepare).
func (r *XAResource) Commit(ctx context.Context, x XID, onePhase bool) error {
	_, _, err := r.invoke(ctx, protocol.XACommit, &x, map[string]string{"onePhase": strconv.FormatBool(onePhase)}, nil)
	return err
}

// Rollback drops the branch's messages.
func (r *XAResource) Rollback(ctx context.Context, x XID) error {
	r.mu.Lock()
	delete(r.mu.halves, x.String())
	r.mu.Unlock()
	_, _, err := r.invoke(ctx, protocol.XARollback, &x, nil, nil)
	return err
}

// Forget forgets a heuristically completed branch (the broker makes no
// heuristic decisions: it answers XAErrNoTA or XAErrProto).
func (r *XAResource) Forget(ctx context.Context, x XID) error {
	_, _, err := r.invoke(ctx, protocol.XAForget, &x, nil, nil)
	return err
}

// Recover lists the broker's prepared branches, oldest first.
func (r *XAResource) Recover(ctx context.Context) ([]XAPrepared, error) {
	_, resp, err := r.invoke(ctx, protocol.XARecover, nil, nil, nil)
	if err != nil {
		return nil, err
	}
	var body struct {
		Branches []struct {
			FormatID     int32  `json:"formatId"`
			GTRID        string `json:"gtrid"`
			BQUAL        string `json:"bqual"`
			PreparedAtMs int64  `json:"preparedAtMs"`
			Messages     int    `json:"messages"`
		} `json:"branches"`
	}
	if err := json.Unmarshal(resp.Body, &body); err != nil {
		return nil, fmt.Errorf("client: XA recover answer of %s: %w", r.broker, err)
	}
	out := make([]XAPrepared, 0, len(body.Branches))
	for _, b := range body.Branches {
		g, err1 := hex.DecodeString(b.GTRID)
		q, err2 := hex.DecodeString(b.BQUAL)
		if err := errors.Join(err1, err2); err != nil {
			return nil, fmt.Errorf("client: XA recover answer of %s: %w", r.broker, err)
		}
		out = append(out, XAPrepared{XID: XID{FormatID: b.FormatID, GTRID: g, BQUAL: q},
			PreparedAt: time.UnixMilli(b.PreparedAtMs), Messages: b.Messages})
	}
	return out, nil
}
