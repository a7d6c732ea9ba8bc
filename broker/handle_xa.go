package broker

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strconv"
	"time"

	"github.com/samsamq/samsa/broker/txn"
	"github.com/samsamq/samsa/broker/xa"
	"github.com/samsamq/samsa/protocol"
)

// handleXA answers the XA codes (protocol.XAStart to XAForget, 9201-9207;
// package broker/xa): the branch is named by ext fields formatId, gtrid
// and bqual (hex), and every answer carries ext field xaCode.
func (b *Broker) handleXA(_ *conn, req *protocol.Command) *protocol.Command {
	if b.repl.isSlave() || b.xa == nil {
		return protocol.NewResponse(req, protocol.SlaveNotAvailable, "a slave broker holds no XA branches")
	}
	if req.Code == protocol.XARecover {
		return b.xaRecover(req)
	}
	x, err := xidOf(req.ExtFields)
	if err != nil {
		return xaResponse(req, 0, &xa.Error{Code: xa.ErrINVAL, Msg: err.Error()})
	}
	flags, _ := strconv.Atoi(req.ExtFields["flags"])
	ctx, cancel := context.WithTimeout(context.Background(), b.cfg.SyncFlushTimeout+time.Second)
	defer cancel()
	code := xa.OK
	switch req.Code {
	case protocol.XAStart:
		err = b.xa.Start(x, flags)
	case protocol.XAEnd:
		var refs []txn.Ref
		if len(req.Body) > 0 {
			if refs, err = txn.ParseRefs(req.Body); err != nil {
				return xaResponse(req, 0, &xa.Error{Code: xa.ErrINVAL, Msg: err.Error()})
			}
		}
		err = b.xa.End(x, refs, flags)
	case protocol.XAPrepare:
		code, err = b.xa.Prepare(ctx, x)
	case protocol.XACommit:
		err = b.xa.Commit(ctx, x, req.ExtFields["onePhase"] == "true")
	case protocol.XARollback:
		err = b.xa.Rollback(ctx, x)
	case protocol.XAForget:
		err = b.xa.Forget(x)
	}
	return xaResponse(req, code, err)
}

// xidOf reads a branch's XID from ext fields.
func xidOf(ext map[string]string) (xa.XID, error) {
	fid, err := strconv.ParseInt(ext["formatId"], 10, 32)
	if err != nil {
		return xa.XID{}, errors.New("ext field formatId: want a 32-bit integer")
	}
	g, err := hex.DecodeString(ext["gtrid"])
	if err != nil {
		return xa.XID{}, errors.New("ext field gtrid: want hex")
	}
	q, err := hex.DecodeString(ext["bqual"])
	if err != nil {
		return xa.XID{}, errors.New("ext field bqual: want hex")
	}
	x := xa.XID{FormatID: int32(fid), GTRID: g, BQUAL: q}
	return x, x.Validate()
}

// xaResponse answers with code (XA_OK or XA_RDONLY) or err's XA code.
func xaResponse(req *protocol.Command, code int, err error) *protocol.Command {
	rc, remark := protocol.Success, ""
	if err != nil {
		var e *xa.Error
		if !errors.As(err, &e) {
			e = &xa.Error{Code: xa.ErrRMERR, Msg: err.Error()}
		}
		code, rc, remark = e.Code, protocol.SystemError, e.Error()
	}
	r := protocol.NewResponse(req, rc, remark)
	r.ExtFields = map[string]string{"xaCode": strconv.Itoa(code)}
	return r
}

// xaBranchJSON is one prepared branch in XARecover's answer.
type xaBranchJSON struct {
	XID          string `json:"xid"`
	FormatID     int32  `json:"formatId"`
	GTRID        string `json:"gtrid"`
	BQUAL        string `json:"bqual"`
	PreparedAtMs int64  `json:"preparedAtMs"`
	Messages     int    `json:"messages"`
}

func (b *Broker) xaRecover(req *protocol.Command) *protocol.Command {
	bs := b.xa.Recover()
	out := struct {
		Branches []xaBranchJSON `json:"branches"`
	}{Branches: make([]xaBranchJSON, 0, len(bs))}
	for _, br := range bs {
		out.Branches = append(out.Branches, xaBranchJSON{XID: br.XID.String(), FormatID: br.XID.FormatID,
			GTRID: hex.EncodeToString(br.XID.GTRID), BQUAL: hex.EncodeToString(br.XID.BQUAL),
			PreparedAtMs: br.PreparedAt.UnixMilli(), Messages: br.Messages})
	}
	body, err := json.Marshal(out)
	if err != nil {
		return xaResponse(req, 0, err)
	}
	r := xaResponse(req, xa.OK, nil)
	r.Body = body
	return r
}
